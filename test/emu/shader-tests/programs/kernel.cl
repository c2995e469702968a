/*
 * Compiled by clang for gfx90a and run as the dispatcher would: the kernel
 * descriptor's entry, kernarg pointer in s[4:5], workgroup id after the user
 * SGPRs, work-item id in v0.
 */
__attribute__((reqd_work_group_size(64, 1, 1)))
kernel void scale_add(global int *out, global const int *in, int n, int k)
{
	/* without the device libraries (-nogpulib): the builtins under get_*_id */
	int i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();

	if (i < n)
		out[i] = in[i] * k + (i & 5);
}
