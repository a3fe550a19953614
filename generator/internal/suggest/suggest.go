// Package suggest finds the nearest of the names a misspelt one could
// mean, for the "did you mean" of error messages.
package suggest

import "strings"

// Nearest returns the candidate closest to s, for a "did you mean" hint: a
// candidate equal to s but for case, else one within an edit distance of
// about a third of its length (tll, ttl; NewBookin, NewBooking); "" when
// none is close. The edit distance is twenty lines here rather than a
// dependency of every generated service's module.
func Nearest(s string, candidates []string) string {
	return NearestWithin(s, candidates, -1)
}

// NearestWithin is Nearest with at most maxEdits edits (case aside);
// -1 for nearest's third of the candidate's length.
func NearestWithin(s string, candidates []string, maxEdits int) string {
	best, bestD := "", 0
	for _, c := range candidates {
		if strings.EqualFold(c, s) {
			return c
		}
		limit := maxEdits
		if limit < 0 {
			limit = max(1, len(c)/3)
		}
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// DidYouMean is " (did you mean X?)" for the nearest candidate, or "".
func DidYouMean(s string, candidates []string) string {
	if n := Nearest(s, candidates); n != "" {
		return " (did you mean " + n + "?)"
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b, in bytes, with
// transpositions counted as one edit (tll for ttl).
func editDistance(a, b string) int {
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
