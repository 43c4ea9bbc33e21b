// Package typo measures how far a mistyped name is from the names that
// exist, for "did you mean" suggestions.
package typo

// maxLen bounds the work: a name this long is no typo of a short one.
const maxLen = 64

// Distance is the number of insertions, deletions, substitutions and swaps
// of neighbours that turn a into b (optimal string alignment), over bytes:
// the names compared are ASCII, and a swap ("agnet") is the commonest
// typo. A string longer than 64 bytes is as far as its length.
func Distance(a, b string) int {
	if len(a) > maxLen || len(b) > maxLen {
		return max(len(a), len(b))
	}
	// Three rows of the alignment table: two back for a swap.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
