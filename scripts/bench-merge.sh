#!/bin/sh
# Baselines for the merge benchmarks: merges each branch into the target,
# one at a time, and prints the total wall time in nanoseconds.
#   plumbing  merge-tree --write-tree + commit-tree + update-ref (CAS)
#   worktree  `git merge --no-ff` in one reused detached worktree, then CAS
# usage: bench-merge.sh plumbing|worktree REPO TARGET BRANCH...
set -eu
mode=$1 repo=$2 target=$3
shift 3
cd "$repo"
if [ "$mode" = worktree ]; then
	wt="$repo/.worktrees/_bench"
	[ -d "$wt" ] || git worktree add -q --detach "$wt" "refs/heads/$target"
fi
start=$(date +%s%N)
for b in "$@"; do
	old=$(git rev-parse "refs/heads/$target")
	case $mode in
	plumbing)
		tree=$(git merge-tree --write-tree "$old" "refs/heads/$b")
		c=$(git commit-tree "$tree" -p "$old" -p "refs/heads/$b" -m "Merge $b" -m "Chorus-Task: $b")
		;;
	worktree)
		git -C "$wt" checkout -q --detach "$old"
		git -C "$wt" merge -q --no-ff -m "Merge $b" "refs/heads/$b"
		c=$(git -C "$wt" rev-parse HEAD)
		;;
	*) echo "unknown mode $mode" >&2; exit 2 ;;
	esac
	git update-ref -m "bench: merge $b" "refs/heads/$target" "$c" "$old"
done
end=$(date +%s%N)
echo $((end - start))
