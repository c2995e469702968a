#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The repository explains itself: no tracked file points to a document outside it, every
# section mark (the section sign and a number: N or N.N) names a heading that exists in the
# repository's document it refers to, and every path of the repository that a document of
# Documentation/ names (`plugins/...`, `test/...`, `tools/...`, `images/...`, `Documentation/...`)
# exists, so that a file moved or renamed takes its documents along; and every command block a
# document marks for a test (a line "<!-- guide: NAME -->" before a ```sh block) is run by a test
# (`tap_guide NAME` in test/e2e/), which runs it as written, and every block a test runs is there.
#
# Which document a mark refers to: the last Documentation/NAME.md named before it on the same
# line; else, in a document of Documentation/, that document itself; else the one document of
# Documentation/ the file names somewhere (a header comment saying that its marks are sections of
# Documentation/kfd-interface.md). A file that names several documents must name one on every
# line that carries a mark. A heading is a Markdown heading that starts with the number:
# "## 2.4 RESTORE" is section 2.4, "## 2. CRIU operations" is section 2. (This script spells the
# mark as $S so that it does not check itself.)
#
# Before looking at the tree, the checks run on a planted tree with one defect of each kind and
# must find each: a check that cannot fail proves nothing.
# Ends with "N passed, N failed". Usage: test/docs/run.sh [repository root]
# Backquotes in single quotes are Markdown, not commands (SC2016); the planted tree counts in a
# subshell of its own on purpose (SC2030, SC2031).
# shellcheck disable=SC2016,SC2030,SC2031
set -uo pipefail
top=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
export LC_ALL=C
S=$'\xc2\xa7'

passed=0 failed=0
pass() { echo "PASS: docs: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: docs: $1${2:+ ($2)}"; failed=$((failed + 1)); }

# Names of documents that live outside the repository (the team's notes and the like). Spelt with
# a bracket so that this script does not match itself.
outside_re='kfd[-]abi|upstream[-]plugin|testbed[.]md|todays[-]stack|ecosyste[m]-and-peers|DESIG[N][.]md|STYLE[.]md|share[d]/referenc[e]|/work/share[d]|\.\./share[d]/'

# outside_refs <root> <files...>: one "file:line: text" per reference to an outside document.
outside_refs() {
	local root=$1
	shift
	(cd "$root" && grep -nIE "$outside_re" -- "$@" 2>/dev/null) || true
}

# headings <root>: "Documentation/NAME.md N.N" for every numbered heading of every document.
headings() {
	local root=$1 d
	for d in "$root"/Documentation/*.md; do
		[ -e "$d" ] || continue
		sed -nE 's/^#{1,6} +([0-9]+(\.[0-9]+)*)\.?( .*)?$/\1/p' "$d" | sed "s|^|Documentation/${d##*/} |"
	done
}

# section_marks <root> <file>: one line per mark: "ok|bad <line> <mark> <document or reason>".
section_marks() {
	local root=$1 file=$2 default=""
	local names
	if [[ $file == Documentation/*.md ]]; then
		default=$file
	else
		names=$(grep -oE 'Documentation/[A-Za-z0-9_.-]+\.md' "$root/$file" | sort -u)
		if [ "$(grep -c . <<<"$names")" -eq 1 ]; then
			default=$names
		elif [ -n "$names" ]; then
			default=AMBIGUOUS
		fi
	fi
	headings "$root" | awk -v default="$default" '
		FILENAME == "-" { have[$1 " " $2] = 1; next }
		{
			line = $0; doc = ""
			while (match(line, /Documentation\/[A-Za-z0-9_.-]+\.md|\xc2\xa7[0-9]+(\.[0-9]+)*/)) {
				tok = substr(line, RSTART, RLENGTH)
				line = substr(line, RSTART + RLENGTH)
				if (tok ~ /^Documentation/) { doc = tok; continue }
				mark = substr(tok, 3)
				target = doc != "" ? doc : default
				if (target == "")
					print "bad", FNR, mark, "names no document of Documentation/"
				else if (target == "AMBIGUOUS")
					print "bad", FNR, mark, "the file names several documents: name one on this line"
				else if (!((target " " mark) in have))
					print "bad", FNR, mark, "no heading " mark " in " target
				else
					print "ok", FNR, mark, target
			}
		}' - "$root/$file"
}

# named_paths <root> <document>: "<line> <path>" for every repository path the document names.
named_paths() {
	grep -noE '`(plugins|test|tools|images|Documentation|scripts|debian)/[A-Za-z0-9_./*-]*`' "$1/$2" | tr -d '`' | tr ':' ' '
}

# check_tree <root> <label>: runs both checks over the tracked files of <root> (or every file when
# it is not a git checkout); counts one pass per resolved mark, one failure per defect.
check_tree() {
	local root=$1 label=$2 files f status n mark rest
	if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		mapfile -t files < <(git -C "$root" ls-files)
	else
		mapfile -t files < <(cd "$root" && find . -type f | sed 's|^\./||' | sort)
	fi
	local outside
	outside=$(outside_refs "$root" "${files[@]}")
	if [ -z "$outside" ]; then
		pass "$label: no file points to a document outside the repository"
	else
		while IFS= read -r f; do
			fail "$label: points outside the repository" "$f"
		done <<<"$outside"
	fi
	local resolved=0
	for f in "${files[@]}"; do
		grep -qI $'\xc2\xa7' "$root/$f" 2>/dev/null || continue
		while read -r status n mark rest; do
			if [ "$status" = ok ]; then
				resolved=$((resolved + 1))
			else
				fail "$label: $f:$n: $S$mark" "$rest"
			fi
		done < <(section_marks "$root" "$f")
	done
	[ "$resolved" -gt 0 ] && pass "$label: $resolved section marks resolve to a heading of their document"
	local found=0 missing=0 line path
	for f in "${files[@]}"; do
		[[ $f == Documentation/*.md ]] || continue
		while read -r line path; do
			# a path may be a glob (`test/e2e/scenarios/2*`)
			if compgen -G "$root/${path%/}" >/dev/null; then
				found=$((found + 1))
			else
				missing=$((missing + 1))
				fail "$label: $f:$line names $path" "no such file in the repository"
			fi
		done < <(named_paths "$root" "$f")
	done
	[ "$found" -gt 0 ] && [ "$missing" -eq 0 ] && pass "$label: the $found repository paths the documents name exist"
	check_guide_blocks "$root" "$label" "${files[@]}"
}

# check_guide_blocks <root> <label> <files...>: the marked command blocks of the documents and the
# tests that run them (tap_guide NAME in test/e2e/) name each other.
check_guide_blocks() {
	local root=$1 label=$2 f line name next run=0 bad=0
	shift 2
	local -A blocks=() runs=()
	for f in "$@"; do
		[[ $f == test/e2e/* ]] || continue
		while read -r name; do
			runs[$name]=$f
		done < <(grep -oE 'tap_guide [a-z0-9-]+' "$root/$f" 2>/dev/null | cut -d' ' -f2)
	done
	for f in "$@"; do
		[[ $f == Documentation/*.md ]] || continue
		while IFS=: read -r line name; do
			blocks[$name]=$f
			next=$(sed -n "$((line + 1))p" "$root/$f")
			if [ "$next" != '```sh' ]; then
				fail "$label: $f:$line: guide block $name" "not followed by a sh block"
				bad=$((bad + 1))
			elif [ -z "${runs[$name]:-}" ]; then
				fail "$label: $f:$line: guide block $name" "no test runs it"
				bad=$((bad + 1))
			else
				run=$((run + 1))
			fi
		done < <(grep -nE '^<!-- guide: [a-z0-9-]+ -->$' "$root/$f" | sed -E 's/^([0-9]+):<!-- guide: ([a-z0-9-]+) -->$/\1:\2/')
	done
	for name in "${!runs[@]}"; do
		if [ -z "${blocks[$name]:-}" ]; then
			fail "$label: ${runs[$name]} runs guide block $name" "no document has it"
			bad=$((bad + 1))
		fi
	done
	[ "$run" -gt 0 ] && [ "$bad" -eq 0 ] && pass "$label: the $run command blocks the documents mark are run by a test"
}

# The planted tree: one good mark, and one defect of each kind the checks must find.
self_test() {
	local t
	t=$(mktemp -d)
	mkdir -p "$t/Documentation" "$t/test"
	printf '# Doc\n\n## 1. One\n\n### 1.2 Two\n\nSee %s1.2 and %s3, `test/one.c`.\n`test/gone.c`\n' "$S" "$S" \
		>"$t/Documentation/a.md"
	printf '/* marks: Documentation/a.md */\nint x; /* %s1.2 */\nint y; /* %s1.3 */\n' "$S" "$S" >"$t/test/one.c"
	printf '# notes: kfd%s.md %s2.6\n' -abi "$S" >"$t/test/two.sh"
	printf 'see Documentation/b.md %s1\nand %s1.2\n' "$S" "$S" >"$t/test/three.md"
	printf '<!-- guide: ran -->\n```sh\ntrue\n```\n<!-- guide: unrun -->\n```sh\ntrue\n```\n<!-- guide: nofence -->\ntext\n' \
		>"$t/Documentation/g.md"
	mkdir -p "$t/test/e2e"
	printf 'tap_guide ran "runs it"\ntap_guide ghost "runs nothing"\n' >"$t/test/e2e/s.sh"
	local out
	out=$(passed=0 failed=0; check_tree "$t" planted; echo "$passed $failed")
	rm -rf "$t"
	local want
	for want in "Documentation/a.md:7: ${S}3 (no heading 3" "test/one.c:3: ${S}1.3 (no heading 1.3" \
		'points outside the repository (test/two.sh:1' "test/two.sh:1: ${S}2.6 (names no document" \
		"test/three.md:1: ${S}1 (no heading 1 in Documentation/b.md" \
		"test/three.md:2: ${S}1.2 (no heading 1.2 in Documentation/b.md" \
		'Documentation/a.md:8 names test/gone.c (no such file' \
		'Documentation/g.md:5: guide block unrun (no test runs it' \
		'Documentation/g.md:9: guide block nofence (not followed by a sh block' \
		'test/e2e/s.sh runs guide block ghost (no document has it'; do
		if grep -qF "FAIL: docs: planted: $want" <<<"$out"; then
			pass "the check finds a planted defect: ${want%% (*}"
		else
			fail "the check finds a planted defect: ${want%% (*}" "not reported"
		fi
	done
	if grep -qF 'PASS: docs: planted: 2 section marks resolve' <<<"$out" && [ "$(tail -n1 <<<"$out")" = "1 10" ]; then
		pass "the planted tree's good marks resolve, and nothing else fails"
	else
		fail "the planted tree's good marks resolve, and nothing else fails" "$(tr '\n' ';' <<<"$out")"
	fi
}

self_test
check_tree "$top" tree
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
