// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: the shader core's floating point (see emu_shader_fp.h for why
 * it is a unit of its own).  Built with the FPU flags in the module; every
 * function here runs between kernel_fpu_begin() and kernel_fpu_end().
 *
 * Nothing here calls libm or libgcc: the kernel has neither.  Rounding to an
 * integer uses the 2^23 / 2^52 addition trick under the default
 * round-to-nearest mode (kernel_fpu_begin() loads the default MXCSR),
 * square roots the compiler's builtin (one SSE instruction with
 * -fno-math-errno), exp2, log2, sin and cos short series in double, which
 * are closer than the hardware's own approximations need to be.
 *
 * Where it is not the hardware:
 * - NaN results are the default quiet NaN or the input quieted; min/max
 *   return the other operand when one is NaN (MODE.IEEE=1 behaviour for
 *   quiet NaNs, also applied to signalling ones).
 * - Denormals are always kept, whatever MODE's denormal fields say
 *   (compute kernels built by clang for gfx9 keep f32 and f64 denormals).
 * - Fused multiply-add: f32 and f16 go through double (exact product, one
 *   rounding to double, one to the result: a wrong last bit is possible when
 *   the double sum lies exactly between two results); f64 adds the product's
 *   exact error term (Dekker) to the rounded sum, which is correctly rounded
 *   but in rare cases of cancellation.
 * - v_rcp, v_rsq, v_sqrt are correctly rounded (the hardware's are 1 ulp).
 */
#include "emu_shader_fp.h"
#include "emu_shader_ops.h"

union f32u {
	float f;
	u32 u;
};

union f64u {
	double d;
	u64 u;
};

static inline float f32(u64 v)
{
	union f32u x = { .u = (u32)v };

	return x.f;
}

static inline u32 u32f(float f)
{
	union f32u x = { .f = f };

	return x.u;
}

static inline double f64(u64 v)
{
	union f64u x = { .u = v };

	return x.d;
}

static inline u64 u64d(double d)
{
	union f64u x = { .d = d };

	return x.u;
}

#define QNAN32		0x7fc00000u
#define QNAN64		0x7ff8000000000000ull
#define QNAN16		0x7e00u

static inline bool isnan32(u32 v)
{
	return (v & 0x7fffffffu) > 0x7f800000u;
}

static inline bool isnan64(u64 v)
{
	return (v & ~(1ull << 63)) > 0x7ff0000000000000ull;
}

static inline bool isinf32(u32 v)
{
	return (v & 0x7fffffffu) == 0x7f800000u;
}

static inline bool isinf64(u64 v)
{
	return (v & ~(1ull << 63)) == 0x7ff0000000000000ull;
}

static inline int exp32(u32 v)
{
	return (v >> 23) & 0xff;
}

static inline int exp64(u64 v)
{
	return (v >> 52) & 0x7ff;
}

/* --- rounding to integers, in the current (nearest-even) mode --- */

static double rint64(double x)
{
	const double big = 4503599627370496.0;	/* 2^52 */
	double t;

	if (!(x < big && x > -big))
		return x;		/* already integral, inf or NaN */
	t = x >= 0 ? (x + big) - big : (x - big) + big;
	return t == 0 ? (x < 0 ? -0.0 : 0.0) : t;
}

static double floor64(double x)
{
	double t = rint64(x);

	return t > x ? t - 1 : t;
}

static double ceil64(double x)
{
	double t = rint64(x);

	t = t < x ? t + 1 : t;
	return t == 0 && x < 0 ? -0.0 : t;
}

static double trunc64(double x)
{
	return x < 0 ? ceil64(x) : floor64(x);
}

/* float results go through double: exact for these */
static float rint32(float x)
{
	return (float)rint64(x);
}

static float floor32(float x)
{
	return (float)floor64(x);
}

static float ceil32(float x)
{
	return (float)ceil64(x);
}

static float trunc32(float x)
{
	return (float)trunc64(x);
}

/* x * 2^n, one rounding */
static double ldexp64(double x, int n)
{
	union f64u s;

	if (n > 2100)
		n = 2100;
	if (n < -2100)
		n = -2100;
	while (n > 1000) {
		x *= 0x1p1000;
		n -= 1000;
	}
	while (n < -1000) {
		/* stop before the result becomes denormal, to round once */
		if (x != 0 && exp64(u64d(x)) < 1100)
			break;
		x *= 0x1p-1000;
		n += 1000;
	}
	if (n < -1022) {
		/* two steps; the second is the only inexact one */
		x *= 0x1p-1022;
		n += 1022;
		if (n < -1022)
			n = -1022;
	}
	s.u = (u64)(n + 1023) << 52;
	return x * s.d;
}

static float ldexp32(float x, int n)
{
	if (n > 400)
		n = 400;
	if (n < -400)
		n = -400;
	return (float)ldexp64(x, n);	/* exact in double, one rounding */
}

/* --- transcendental approximations, in double --- */

static double exp2_64(double x)
{
	double n, f, term, sum;
	int i;

	if (x != x)
		return x;
	if (x > 1100)
		return 1.0 / 0.0;
	if (x < -1200)
		return 0;
	n = floor64(x);
	f = (x - n) * 0.69314718055994530942;
	term = 1;
	sum = 1;
	for (i = 1; i < 16; i++) {
		term *= f / i;
		sum += term;
	}
	return ldexp64(sum, (int)n);
}

static double log2_64(double x)
{
	union f64u v = { .d = x };
	double m, t, t2, sum, term;
	int e, i;

	if (x != x || x < 0)
		return 0.0 / 0.0;
	if (x == 0)
		return -1.0 / 0.0;
	if (isinf64(v.u))
		return x;
	e = 0;
	if (exp64(v.u) == 0) {
		v.d *= 0x1p64;
		e = -64;
	}
	e += exp64(v.u) - 1023;
	v.u = (v.u & ((1ull << 52) - 1)) | (1023ull << 52);
	m = v.d;			/* [1, 2) */
	if (m > 1.41421356237309504880) {
		m /= 2;
		e++;
	}
	t = (m - 1) / (m + 1);
	t2 = t * t;
	sum = 0;
	term = t;
	for (i = 1; i < 40; i += 2) {
		sum += term / i;
		term *= t2;
	}
	return e + 2 * sum * 1.44269504088896340736;
}

/* sin(2 pi x): the hardware's v_sin takes revolutions */
static double sinrev(double x)
{
	double r, a, a2, term, sum;
	int i;

	if (x != x || isinf64(u64d(x)))
		return 0.0 / 0.0;
	r = x - rint64(x);		/* [-0.5, 0.5] */
	/* fold into [-0.25, 0.25], where the series converges fast */
	if (r > 0.25)
		r = 0.5 - r;
	else if (r < -0.25)
		r = -0.5 - r;
	a = r * 6.28318530717958647692;
	a2 = a * a;
	term = a;
	sum = a;
	for (i = 3; i < 25; i += 2) {
		term *= -a2 / ((i - 1) * i);
		sum += term;
	}
	return sum;
}

static double sqrt64(double x)
{
	return __builtin_sqrt(x);
}

/* --- fused multiply-add --- */

static float fma32(float a, float b, float c)
{
	return (float)((double)a * b + c);
}

/* Dekker's split: hi + lo == x with hi holding 26 bits */
static void split64(double x, double *hi, double *lo)
{
	double t = x * 134217729.0;	/* 2^27 + 1 */

	*hi = t - (t - x);
	*lo = x - *hi;
}

static double fma64(double a, double b, double c)
{
	double p, e, s, z, ah, al, bh, bl;
	union f64u pa = { .d = a }, pb = { .d = b };

	p = a * b;
	if (isinf64(u64d(p)) || isnan64(u64d(p)) || p == 0 ||
	    exp64(pa.u) > 1900 || exp64(pb.u) > 1900 ||
	    exp64(pa.u) < 100 || exp64(pb.u) < 100)
		return p + c;
	split64(a, &ah, &al);
	split64(b, &bh, &bl);
	e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
	s = p + c;
	if (isinf64(u64d(s)) || isnan64(u64d(s)))
		return s;
	/* the rounding error of p + c, exactly (Knuth's two-sum) */
	z = s - p;
	z = (p - (s - z)) + (c - z);
	return s + (z + e);
}

/* --- f16 --- */

static float h2f(u32 h)
{
	u32 sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	union f32u v;

	if (e == 0x1f)
		v.u = sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0);
	else if (e)
		v.u = sign | ((e + 112) << 23) | (m << 13);
	else {
		v.f = (float)m * 0x1p-24f;
		v.u |= sign;
	}
	return v.f;
}

/* round to nearest even; @f is exact enough for one rounding */
static u32 f2h(float f)
{
	union f32u v = { .f = f };
	u32 sign = (v.u >> 16) & 0x8000u, a = v.u & 0x7fffffffu;
	u32 e, m, r;

	if (a > 0x7f800000u)
		return sign | 0x7e00u | ((a >> 13) & 0x3ff);
	if (a >= 0x477ff000u)		/* rounds to infinity */
		return sign | 0x7c00u;
	if (a < 0x38800000u) {		/* denormal half: exact in float */
		v.u = a;
		v.f = v.f * 0x1p24f;	/* integer count of 2^-24 units */
		r = (u32)rint32(v.f);
		return sign | r;
	}
	e = (a >> 23) - 112;
	m = a & 0x7fffff;
	r = (e << 10) | (m >> 13);
	m &= 0x1fff;
	if (m > 0x1000 || (m == 0x1000 && (r & 1)))
		r++;
	return sign | r;
}

/* --- classification for v_cmp_class --- */

static u32 class_of(bool neg, bool nan, bool snan, bool inf, bool zero, bool denorm)
{
	if (nan)
		return snan ? 1u << 0 : 1u << 1;
	if (inf)
		return neg ? 1u << 2 : 1u << 9;
	if (zero)
		return neg ? 1u << 5 : 1u << 6;
	if (denorm)
		return neg ? 1u << 4 : 1u << 7;
	return neg ? 1u << 3 : 1u << 8;
}

static u32 class32(u32 v)
{
	u32 a = v & 0x7fffffffu;

	return class_of(v >> 31, a > 0x7f800000u, a > 0x7f800000u && !(a & 0x400000u),
			a == 0x7f800000u, a == 0, a && a < 0x800000u);
}

static u32 class64(u64 v)
{
	u64 a = v & ~(1ull << 63);

	return class_of(v >> 63, a > 0x7ff0000000000000ull,
			a > 0x7ff0000000000000ull && !(a & (1ull << 51)),
			a == 0x7ff0000000000000ull, a == 0, a && a < (1ull << 52));
}

static u32 class16(u32 v)
{
	u32 a = v & 0x7fff;

	return class_of((v >> 15) & 1, a > 0x7c00, a > 0x7c00 && !(a & 0x200),
			a == 0x7c00, a == 0, a && a < 0x400);
}

/*
 * Compare conditions, in VOPC order: F LT EQ LE GT LG GE O U NGE NLG NGT NLE
 * NEQ NLT TRU.  Unordered operands make the first eight false and the last
 * eight true (the "N" forms are negations).
 */
static bool fcmp(unsigned int cond, double a, double b)
{
	/* the upper eight negate the lower eight in reverse order */
	if (cond >= 8)
		return !fcmp(15 - cond, a, b);
	switch (cond) {
	case 0:
		return false;
	case 1:
		return a < b;
	case 2:
		return a == b;
	case 3:
		return a <= b;
	case 4:
		return a > b;
	case 5:
		return a < b || a > b;
	case 6:
		return a >= b;
	default:
		return a == a && b == b;
	}
}

static float fmin32(float a, float b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	/* -0 < +0 for min and max, as the hardware orders them */
	if (a == b)
		return (u32f(a) >> 31) ? a : b;
	return a < b ? a : b;
}

static float fmax32(float a, float b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	if (a == b)
		return (u32f(a) >> 31) ? b : a;
	return a > b ? a : b;
}

static double fmin64(double a, double b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	if (a == b)
		return (u64d(a) >> 63) ? a : b;
	return a < b ? a : b;
}

static double fmax64(double a, double b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	if (a == b)
		return (u64d(a) >> 63) ? b : a;
	return a > b ? a : b;
}

static float fmed3(float a, float b, float c)
{
	if (a != a || b != b || c != c)
		return fmin32(fmin32(a, b), c);
	return fmax32(fmin32(a, b), fmin32(fmax32(a, b), c));
}

static u32 cvt_i32(double x)
{
	if (x != x)
		return 0;
	if (x >= 2147483647.0)
		return 0x7fffffff;
	if (x <= -2147483648.0)
		return 0x80000000u;
	return (u32)(s32)x;
}

static u32 cvt_u32(double x)
{
	if (x != x || x <= 0)
		return 0;
	if (x >= 4294967295.0)
		return 0xffffffffu;
	return (u32)x;
}

/* frexp: x = mant * 2^exp, |mant| in [0.5, 1) */
static double frexp_mant64(double x, int *e)
{
	union f64u v = { .d = x };
	int adj = 0;

	*e = 0;
	if (x == 0 || x != x || isinf64(v.u))
		return x;
	if (exp64(v.u) == 0) {
		v.d *= 0x1p64;
		adj = -64;
	}
	*e = exp64(v.u) - 1022 + adj;
	v.u = (v.u & ~(0x7ffull << 52)) | (1022ull << 52);
	return v.d;
}

static float fract32(float x)
{
	float r;

	if (x != x)
		return x;
	if (isinf32(u32f(x)))
		return 0.0f / 0.0f;
	r = x - floor32(x);
	return r < 0x1.fffffep-1f ? r : 0x1.fffffep-1f;
}

static double fract64(double x)
{
	double r;

	if (x != x)
		return x;
	if (isinf64(u64d(x)))
		return 0.0 / 0.0;
	r = x - floor64(x);
	return r < 0x1.fffffffffffffp-1 ? r : 0x1.fffffffffffffp-1;
}

/* --- division helpers, as the compiler's expansion of a / b uses them --- */

/* v_div_scale: s0 is the numerator or the denominator, s1 den, s2 num */
static u32 div_scale32(u32 s0, u32 s1, u32 s2, bool *vcc)
{
	float d = f32(s0), den = f32(s1), num = f32(s2);
	int en = exp32(s2), ed = exp32(s1);

	*vcc = false;
	if (num == 0 || den == 0 || isnan32(s1) || isnan32(s2))
		return QNAN32;
	if (en - ed >= 96) {
		*vcc = true;
		return s0 == s1 ? u32f(ldexp32(d, 64)) : s0;
	}
	if (ed == 0)
		return u32f(ldexp32(d, 64));
	if (ed >= 253 && en - ed < -126 + 23) {
		/* 1/den and num/den both denormal */
		*vcc = true;
		return s0 == s1 ? u32f(ldexp32(d, 64)) : s0;
	}
	if (ed >= 253)
		return u32f(ldexp32(d, -64));
	if (en - ed <= -126) {
		*vcc = true;
		return s0 == s2 ? u32f(ldexp32(d, 64)) : s0;
	}
	if (en <= 23)
		return u32f(ldexp32(d, 64));
	return s0;
}

static u64 div_scale64(u64 s0, u64 s1, u64 s2, bool *vcc)
{
	double d = f64(s0), den = f64(s1), num = f64(s2);
	int en = exp64(s2), ed = exp64(s1);

	*vcc = false;
	if (num == 0 || den == 0 || isnan64(s1) || isnan64(s2))
		return QNAN64;
	if (en - ed >= 768) {
		*vcc = true;
		return s0 == s1 ? u64d(ldexp64(d, 128)) : s0;
	}
	if (ed == 0)
		return u64d(ldexp64(d, 128));
	if (ed >= 2045 && en - ed < -1022 + 52) {
		*vcc = true;
		return s0 == s1 ? u64d(ldexp64(d, 128)) : s0;
	}
	if (ed >= 2045)
		return u64d(ldexp64(d, -128));
	if (en - ed <= -1022) {
		*vcc = true;
		return s0 == s2 ? u64d(ldexp64(d, 128)) : s0;
	}
	if (en <= 53)
		return u64d(ldexp64(d, 128));
	return s0;
}

/* v_div_fixup: s0 the quotient, s1 the denominator, s2 the numerator */
static u32 div_fixup32(u32 q, u32 den, u32 num)
{
	u32 sign = (den ^ num) & 0x80000000u;

	if (isnan32(num))
		return num | 0x400000u;
	if (isnan32(den))
		return den | 0x400000u;
	if (!(den & 0x7fffffffu) && !(num & 0x7fffffffu))
		return 0xffc00000u;
	if (isinf32(den) && isinf32(num))
		return 0xffc00000u;
	if (!(den & 0x7fffffffu) || isinf32(num))
		return sign | 0x7f800000u;
	if (isinf32(den) || !(num & 0x7fffffffu))
		return sign;
	return sign | (q & 0x7fffffffu);
}

static u64 div_fixup64(u64 q, u64 den, u64 num)
{
	const u64 abs = ~(1ull << 63);
	u64 sign = (den ^ num) & (1ull << 63);

	if (isnan64(num))
		return num | (1ull << 51);
	if (isnan64(den))
		return den | (1ull << 51);
	if (!(den & abs) && !(num & abs))
		return 0xfff8000000000000ull;
	if (isinf64(den) && isinf64(num))
		return 0xfff8000000000000ull;
	if (!(den & abs) || isinf64(num))
		return sign | 0x7ff0000000000000ull;
	if (isinf64(den) || !(num & abs))
		return sign;
	return sign | (q & abs);
}

/* --- output modifiers --- */

static u64 outmod32(u64 v, bool clamp, unsigned int omod)
{
	float f = f32(v);

	switch (omod) {
	case 1:
		f *= 2;
		break;
	case 2:
		f *= 4;
		break;
	case 3:
		f *= 0.5f;
		break;
	}
	if (clamp) {
		if (f != f || f < 0)
			f = 0;	/* NaN clamps to 0 (DX10 rule) */
		else if (f > 1)
			f = 1;
	}
	return u32f(f);
}

static u64 outmod64(u64 v, bool clamp, unsigned int omod)
{
	double f = f64(v);

	switch (omod) {
	case 1:
		f *= 2;
		break;
	case 2:
		f *= 4;
		break;
	case 3:
		f *= 0.5;
		break;
	}
	if (clamp) {
		if (f != f || f < 0)
			f = 0;
		else if (f > 1)
			f = 1;
	}
	return u64d(f);
}

static u64 outmod16(u64 v, bool clamp, unsigned int omod)
{
	return f2h(f32(outmod32(u32f(h2f((u32)v)), clamp, omod)));
}

/* lane loop over @exec */
#define LANES(a, i) \
	for (u64 _m = (a)->exec; _m && ((i) = __builtin_ctzll(_m), 1); _m &= _m - 1)

enum fp_width { W32, W64, W16, WINT };

static bool fp_f32(struct emu_fp_args *a, unsigned int *w)
{
	const u64 *x = a->src[0], *y = a->src[1], *z = a->src[2];
	u64 *d = a->dst;
	unsigned int i;
	bool b;

	*w = W32;
	switch (a->op) {
	case V_ADD_F32:
		LANES(a, i) d[i] = u32f(f32(x[i]) + f32(y[i]));
		break;
	case V_SUB_F32:
		LANES(a, i) d[i] = u32f(f32(x[i]) - f32(y[i]));
		break;
	case V_SUBREV_F32:
		LANES(a, i) d[i] = u32f(f32(y[i]) - f32(x[i]));
		break;
	case V_MUL_F32:
		LANES(a, i) d[i] = u32f(f32(x[i]) * f32(y[i]));
		break;
	case V_MUL_LEGACY_F32:
		/* 0 * anything, infinities and NaN included, is 0 */
		LANES(a, i) d[i] = (f32(x[i]) == 0 || f32(y[i]) == 0) ? 0 :
			u32f(f32(x[i]) * f32(y[i]));
		break;
	case V_MIN_F32:
		LANES(a, i) d[i] = u32f(fmin32(f32(x[i]), f32(y[i])));
		break;
	case V_MAX_F32:
		LANES(a, i) d[i] = u32f(fmax32(f32(x[i]), f32(y[i])));
		break;
	case V_MIN3_F32:
		LANES(a, i) d[i] = u32f(fmin32(fmin32(f32(x[i]), f32(y[i])), f32(z[i])));
		break;
	case V_MAX3_F32:
		LANES(a, i) d[i] = u32f(fmax32(fmax32(f32(x[i]), f32(y[i])), f32(z[i])));
		break;
	case V_MED3_F32:
		LANES(a, i) d[i] = u32f(fmed3(f32(x[i]), f32(y[i]), f32(z[i])));
		break;
	case V_MAD_F32:
	case V_MAC_F32:
	case V_MADMK_F32:
	case V_MADAK_F32:
		/* not fused: the product rounds first */
		LANES(a, i) {
			float p = f32(x[i]) * f32(y[i]);

			d[i] = u32f(p + f32(z[i]));
		}
		break;
	case V_MAD_LEGACY_F32:
		LANES(a, i) {
			float p = (f32(x[i]) == 0 || f32(y[i]) == 0) ? 0 : f32(x[i]) * f32(y[i]);

			d[i] = u32f(p + f32(z[i]));
		}
		break;
	case V_FMA_F32:
	case V_FMAC_F32:
		LANES(a, i) d[i] = u32f(fma32(f32(x[i]), f32(y[i]), f32(z[i])));
		break;
	case V_LDEXP_F32:
		LANES(a, i) d[i] = u32f(ldexp32(f32(x[i]), (s32)y[i] > 400 ? 400 :
					       (s32)y[i] < -400 ? -400 : (s32)y[i]));
		break;
	case V_FRACT_F32:
		LANES(a, i) d[i] = u32f(fract32(f32(x[i])));
		break;
	case V_TRUNC_F32:
		LANES(a, i) d[i] = u32f(trunc32(f32(x[i])));
		break;
	case V_CEIL_F32:
		LANES(a, i) d[i] = u32f(ceil32(f32(x[i])));
		break;
	case V_RNDNE_F32:
		LANES(a, i) d[i] = u32f(rint32(f32(x[i])));
		break;
	case V_FLOOR_F32:
		LANES(a, i) d[i] = u32f(floor32(f32(x[i])));
		break;
	case V_EXP_F32:
	case V_EXP_LEGACY_F32:
		LANES(a, i) d[i] = u32f((float)exp2_64(f32(x[i])));
		break;
	case V_LOG_F32:
	case V_LOG_LEGACY_F32:
		LANES(a, i) d[i] = u32f((float)log2_64(f32(x[i])));
		break;
	case V_RCP_F32:
	case V_RCP_IFLAG_F32:
		LANES(a, i) d[i] = u32f(1.0f / f32(x[i]));
		break;
	case V_RSQ_F32:
		LANES(a, i) d[i] = u32f((float)(1.0 / sqrt64(f32(x[i]))));
		break;
	case V_SQRT_F32:
		LANES(a, i) d[i] = u32f((float)sqrt64(f32(x[i])));
		break;
	case V_SIN_F32:
		LANES(a, i) d[i] = u32f((float)sinrev(f32(x[i])));
		break;
	case V_COS_F32:
		LANES(a, i) d[i] = u32f((float)sinrev((double)f32(x[i]) + 0.25));
		break;
	case V_FREXP_MANT_F32:
		LANES(a, i) {
			int e;

			d[i] = u32f((float)frexp_mant64(f32(x[i]), &e));
		}
		break;
	case V_CVT_F32_I32:
		LANES(a, i) d[i] = u32f((float)(s32)x[i]);
		break;
	case V_CVT_F32_U32:
		LANES(a, i) d[i] = u32f((float)(u32)x[i]);
		break;
	case V_CVT_F32_UBYTE0:
	case V_CVT_F32_UBYTE1:
	case V_CVT_F32_UBYTE2:
	case V_CVT_F32_UBYTE3: {
		unsigned int sh = (a->op - V_CVT_F32_UBYTE0) * 8;

		LANES(a, i) d[i] = u32f((float)((x[i] >> sh) & 0xff));
		break;
	}
	case V_CVT_F32_F64:
		LANES(a, i) d[i] = u32f((float)f64(x[i]));
		break;
	case V_CVT_F32_F16:
		LANES(a, i) d[i] = u32f(h2f((u32)x[i]));
		break;
	case V_CVT_OFF_F32_I4:
		LANES(a, i) d[i] = u32f((float)(((s32)(x[i] << 28) >> 28)) / 16.0f);
		break;
	case V_DIV_SCALE_F32:
		a->mask = 0;
		LANES(a, i) {
			d[i] = div_scale32((u32)x[i], (u32)y[i], (u32)z[i], &b);
			if (b)
				a->mask |= 1ull << i;
		}
		break;
	case V_DIV_FMAS_F32:
		LANES(a, i) {
			float r = fma32(f32(x[i]), f32(y[i]), f32(z[i]));

			if (a->vcc >> i & 1)
				r = ldexp32(r, exp32((u32)z[i]) >= 127 ? 64 : -64);
			d[i] = u32f(r);
		}
		break;
	case V_DIV_FIXUP_F32:
		LANES(a, i) d[i] = div_fixup32((u32)x[i], (u32)y[i], (u32)z[i]);
		break;
	default:
		return false;
	}
	return true;
}

static bool fp_f64(struct emu_fp_args *a, unsigned int *w)
{
	const u64 *x = a->src[0], *y = a->src[1], *z = a->src[2];
	u64 *d = a->dst;
	unsigned int i;
	bool b;

	*w = W64;
	switch (a->op) {
	case V_ADD_F64:
		LANES(a, i) d[i] = u64d(f64(x[i]) + f64(y[i]));
		break;
	case V_MUL_F64:
		LANES(a, i) d[i] = u64d(f64(x[i]) * f64(y[i]));
		break;
	case V_MIN_F64:
		LANES(a, i) d[i] = u64d(fmin64(f64(x[i]), f64(y[i])));
		break;
	case V_MAX_F64:
		LANES(a, i) d[i] = u64d(fmax64(f64(x[i]), f64(y[i])));
		break;
	case V_FMA_F64:
	case V_FMAC_F64:
		LANES(a, i) d[i] = u64d(fma64(f64(x[i]), f64(y[i]), f64(z[i])));
		break;
	case V_LDEXP_F64:
		LANES(a, i) d[i] = u64d(ldexp64(f64(x[i]), (s32)y[i] > 2100 ? 2100 :
					       (s32)y[i] < -2100 ? -2100 : (s32)y[i]));
		break;
	case V_FRACT_F64:
		LANES(a, i) d[i] = u64d(fract64(f64(x[i])));
		break;
	case V_TRUNC_F64:
		LANES(a, i) d[i] = u64d(trunc64(f64(x[i])));
		break;
	case V_CEIL_F64:
		LANES(a, i) d[i] = u64d(ceil64(f64(x[i])));
		break;
	case V_RNDNE_F64:
		LANES(a, i) d[i] = u64d(rint64(f64(x[i])));
		break;
	case V_FLOOR_F64:
		LANES(a, i) d[i] = u64d(floor64(f64(x[i])));
		break;
	case V_RCP_F64:
		LANES(a, i) d[i] = u64d(1.0 / f64(x[i]));
		break;
	case V_RSQ_F64:
		LANES(a, i) d[i] = u64d(1.0 / sqrt64(f64(x[i])));
		break;
	case V_SQRT_F64:
		LANES(a, i) d[i] = u64d(sqrt64(f64(x[i])));
		break;
	case V_FREXP_MANT_F64:
		LANES(a, i) {
			int e;

			d[i] = u64d(frexp_mant64(f64(x[i]), &e));
		}
		break;
	case V_CVT_F64_I32:
		LANES(a, i) d[i] = u64d((double)(s32)x[i]);
		break;
	case V_CVT_F64_U32:
		LANES(a, i) d[i] = u64d((double)(u32)x[i]);
		break;
	case V_CVT_F64_F32:
		LANES(a, i) d[i] = u64d((double)f32(x[i]));
		break;
	case V_DIV_SCALE_F64:
		a->mask = 0;
		LANES(a, i) {
			d[i] = div_scale64(x[i], y[i], z[i], &b);
			if (b)
				a->mask |= 1ull << i;
		}
		break;
	case V_DIV_FMAS_F64:
		LANES(a, i) {
			double r = fma64(f64(x[i]), f64(y[i]), f64(z[i]));

			if (a->vcc >> i & 1)
				r = ldexp64(r, exp64(z[i]) >= 1023 ? 128 : -128);
			d[i] = u64d(r);
		}
		break;
	case V_DIV_FIXUP_F64:
		LANES(a, i) d[i] = div_fixup64(x[i], y[i], z[i]);
		break;
	default:
		return false;
	}
	return true;
}

static bool fp_f16(struct emu_fp_args *a, unsigned int *w)
{
	const u64 *x = a->src[0], *y = a->src[1], *z = a->src[2];
	u64 *d = a->dst;
	unsigned int i;

	*w = W16;
	switch (a->op) {
	case V_ADD_F16:
		LANES(a, i) d[i] = f2h(h2f(x[i]) + h2f(y[i]));
		break;
	case V_SUB_F16:
		LANES(a, i) d[i] = f2h(h2f(x[i]) - h2f(y[i]));
		break;
	case V_SUBREV_F16:
		LANES(a, i) d[i] = f2h(h2f(y[i]) - h2f(x[i]));
		break;
	case V_MUL_F16:
		LANES(a, i) d[i] = f2h(h2f(x[i]) * h2f(y[i]));
		break;
	case V_MIN_F16:
		LANES(a, i) d[i] = f2h(fmin32(h2f(x[i]), h2f(y[i])));
		break;
	case V_MAX_F16:
		LANES(a, i) d[i] = f2h(fmax32(h2f(x[i]), h2f(y[i])));
		break;
	case V_FMA_F16:
	case V_MAD_F16:
	case V_MAC_F16:
		/* the f16 product is exact in float; the sum rounds twice at worst */
		LANES(a, i) d[i] = f2h(fma32(h2f(x[i]), h2f(y[i]), h2f(z[i])));
		break;
	case V_LDEXP_F16:
		LANES(a, i) d[i] = f2h(ldexp32(h2f(x[i]), (s32)y[i] > 100 ? 100 :
					     (s32)y[i] < -100 ? -100 : (s32)y[i]));
		break;
	case V_CVT_F16_F32:
		LANES(a, i) d[i] = f2h(f32(x[i]));
		break;
	case V_CVT_F16_U16:
		LANES(a, i) d[i] = f2h((float)(x[i] & 0xffff));
		break;
	case V_CVT_F16_I16:
		LANES(a, i) d[i] = f2h((float)(s16)x[i]);
		break;
	case V_RCP_F16:
		LANES(a, i) d[i] = f2h(1.0f / h2f(x[i]));
		break;
	case V_SQRT_F16:
		LANES(a, i) d[i] = f2h((float)sqrt64(h2f(x[i])));
		break;
	case V_FLOOR_F16:
		LANES(a, i) d[i] = f2h(floor32(h2f(x[i])));
		break;
	case V_CEIL_F16:
		LANES(a, i) d[i] = f2h(ceil32(h2f(x[i])));
		break;
	case V_TRUNC_F16:
		LANES(a, i) d[i] = f2h(trunc32(h2f(x[i])));
		break;
	case V_RNDNE_F16:
		LANES(a, i) d[i] = f2h(rint32(h2f(x[i])));
		break;
	default:
		return false;
	}
	return true;
}

/* float in, integer out: no output modifiers */
static bool fp_toint(struct emu_fp_args *a)
{
	const u64 *x = a->src[0], *y = a->src[1];
	u64 *d = a->dst;
	unsigned int i;
	int e;

	switch (a->op) {
	case V_CVT_U32_F32:
		LANES(a, i) d[i] = cvt_u32(f32(x[i]));
		break;
	case V_CVT_I32_F32:
		LANES(a, i) d[i] = cvt_i32(f32(x[i]));
		break;
	case V_CVT_RPI_I32_F32:
		LANES(a, i) d[i] = cvt_i32(floor64((double)f32(x[i]) + 0.5));
		break;
	case V_CVT_FLR_I32_F32:
		LANES(a, i) d[i] = cvt_i32(floor64(f32(x[i])));
		break;
	case V_CVT_U32_F64:
		LANES(a, i) d[i] = cvt_u32(f64(x[i]));
		break;
	case V_CVT_I32_F64:
		LANES(a, i) d[i] = cvt_i32(f64(x[i]));
		break;
	case V_CVT_U16_F16:
		LANES(a, i) {
			u32 v = cvt_u32(h2f(x[i]));

			d[i] = v > 0xffff ? 0xffff : v;
		}
		break;
	case V_CVT_I16_F16:
		LANES(a, i) {
			s32 v = (s32)cvt_i32(h2f(x[i]));

			d[i] = (u16)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
		}
		break;
	case V_FREXP_EXP_I32_F32:
		LANES(a, i) {
			frexp_mant64(f32(x[i]), &e);
			d[i] = (u32)e;
		}
		break;
	case V_FREXP_EXP_I32_F64:
		LANES(a, i) {
			frexp_mant64(f64(x[i]), &e);
			d[i] = (u32)e;
		}
		break;
	case V_CVT_PKRTZ_F16_F32:
		/* round toward zero: truncate the float to half precision */
		LANES(a, i) {
			u32 lo, hi, k;
			u64 s[2] = { x[i], y[i] };
			u32 h[2];

			for (k = 0; k < 2; k++) {
				float f = f32(s[k]);
				u32 r = f2h(f);

				/* rounded away from zero: step back one ulp */
				if (!isnan32((u32)s[k]) && !isinf32((u32)s[k]) &&
				    ((r & 0x7fff) == 0x7c00 || __builtin_fabsf(h2f(r)) > __builtin_fabsf(f)))
					r--;
				h[k] = r;
			}
			lo = h[0];
			hi = h[1];
			d[i] = lo | (hi << 16);
		}
		break;
	default:
		return false;
	}
	return true;
}

static bool fp_cmp(struct emu_fp_args *a)
{
	const u64 *x = a->src[0], *y = a->src[1];
	unsigned int i, op = a->op, cond = op & 15;
	u64 m = 0;

	if (op == V_CMP_CLASS_F32 || op == V_CMPX_CLASS_F32) {
		LANES(a, i) if (class32((u32)x[i]) & (u32)y[i])
			m |= 1ull << i;
	} else if (op == V_CMP_CLASS_F64 || op == V_CMPX_CLASS_F64) {
		LANES(a, i) if (class64(x[i]) & (u32)y[i])
			m |= 1ull << i;
	} else if (op == V_CMP_CLASS_F16 || op == V_CMPX_CLASS_F16) {
		LANES(a, i) if (class16((u32)x[i]) & (u32)y[i])
			m |= 1ull << i;
	} else if (op >= V_CMP_F_F16 && op <= V_CMPX_TRU_F16) {
		LANES(a, i) if (fcmp(cond, h2f(x[i]), h2f(y[i])))
			m |= 1ull << i;
	} else if (op >= V_CMP_F_F32 && op <= V_CMPX_TRU_F32) {
		LANES(a, i) if (fcmp(cond, f32(x[i]), f32(y[i])))
			m |= 1ull << i;
	} else if (op >= V_CMP_F_F64 && op <= V_CMPX_TRU_F64) {
		LANES(a, i) if (fcmp(cond, f64(x[i]), f64(y[i])))
			m |= 1ull << i;
	} else {
		return false;
	}
	a->mask = m;
	return true;
}

bool emu_fp_valu(struct emu_fp_args *a)
{
	unsigned int w, i;

	if (a->op < 0x100)
		return fp_cmp(a);
	if (fp_toint(a))
		return true;
	if (!fp_f32(a, &w) && !fp_f64(a, &w) && !fp_f16(a, &w))
		return false;
	if (!a->clamp && !a->omod)
		return true;
	LANES(a, i) {
		if (w == W32)
			a->dst[i] = outmod32(a->dst[i], a->clamp, a->omod);
		else if (w == W64)
			a->dst[i] = outmod64(a->dst[i], a->clamp, a->omod);
		else
			a->dst[i] = outmod16(a->dst[i], a->clamp, a->omod);
	}
	return true;
}

u32 emu_fp_atomic32(unsigned int op, u32 old, u32 val)
{
	switch (op) {
	case EMU_FP_ADD:
		return u32f(f32(old) + f32(val));
	case EMU_FP_MIN:
		return u32f(fmin32(f32(old), f32(val)));
	default:
		return u32f(fmax32(f32(old), f32(val)));
	}
}

u64 emu_fp_atomic64(unsigned int op, u64 old, u64 val)
{
	switch (op) {
	case EMU_FP_ADD:
		return u64d(f64(old) + f64(val));
	case EMU_FP_MIN:
		return u64d(fmin64(f64(old), f64(val)));
	default:
		return u64d(fmax64(f64(old), f64(val)));
	}
}

u32 emu_fp_pk_add_f16(u32 old, u32 val)
{
	u32 lo = f2h(h2f(old & 0xffff) + h2f(val & 0xffff));
	u32 hi = f2h(h2f(old >> 16) + h2f(val >> 16));

	return lo | (hi << 16);
}

bool emu_fp_eq32(u32 a, u32 b)
{
	return f32(a) == f32(b);
}

bool emu_fp_eq64(u64 a, u64 b)
{
	return f64(a) == f64(b);
}
