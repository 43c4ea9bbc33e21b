package safety

import (
	"cmp"
	"net/url"
	"slices"
	"strings"
)

// redactedMark replaces every secret found in text.
const redactedMark = "[REDACTED]"

// minSecretLen is the shortest secret worth redacting; shorter strings
// would blank out ordinary words.
const minSecretLen = 4

// Redactor removes known secrets from text before it reaches the model,
// the database or the logs. The zero value and a nil *Redactor redact
// nothing. It is safe for concurrent use.
type Redactor struct {
	r *strings.Replacer
}

// NewRedactor returns a Redactor for the given secrets, ignoring those
// shorter than four characters. URL-encoded forms are redacted too.
func NewRedactor(secrets ...string) *Redactor {
	var forms []string
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) >= minSecretLen && !seen[s] {
			seen[s] = true
			forms = append(forms, s)
		}
	}
	for _, s := range secrets {
		add(s)
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
	}
	if len(forms) == 0 {
		return &Redactor{}
	}
	// Longest first, so that a secret containing another is replaced whole.
	slices.SortFunc(forms, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, redactedMark)
	}
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// Redact returns s with every secret replaced by [REDACTED].
func (r *Redactor) Redact(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}
