package idemimpl

import (
	"fmt"
	"mime"
	"strconv"
	"strings"

	"github.com/idemgen/idemgen/internal/jsonkit"
	"github.com/idemgen/idemgen/runtime/idem"
)

// The body's media type and content coding: which declared media type a
// request's Content-Type picks, what the canonical form records of it,
// and which content codings a body may have.

// coding refuses a body in a content coding that b does not accept (see
// Body.ContentEncoding): only identity, or none, is decoded.
func (q *Request) coding(b *Body) error {
	if b.ContentEncoding {
		return nil
	}
	for _, line := range q.r.Header.Values("Content-Encoding") {
		for _, c := range strings.Split(line, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return fmt.Errorf("%w: %w: Content-Encoding %s; send the body without a content coding (identity)",
					idem.ErrUnsupportedMediaType, idem.ErrContentEncoding, strconv.Quote(c))
			}
		}
	}
	return nil
}

// pickMedia matches a Content-Type against the declared media types:
// exactly, then type/*, then */*. It returns the media type as the
// canonical form records it (canonicalMedia).
func pickMedia(b *Body, ct string) (*Media, string, error) {
	if strings.TrimSpace(ct) == "" {
		switch {
		case len(b.Media) == 1:
			return &b.Media[0], canonicalMedia(&b.Media[0], b.Media[0].Type, nil), nil
		case b.Media[0].Decode == AsJSON:
			return &b.Media[0], "application/json", nil
		}
		return nil, "", fmt.Errorf("%w: the request has no Content-Type; send one of %s", idem.ErrUnsupportedMediaType, declared(b))
	}
	essence, params, err := jsonkit.ParseMediaType(ct)
	if err != nil {
		return nil, "", fmt.Errorf("%w: Content-Type %q does not parse", idem.ErrUnsupportedMediaType, ct)
	}
	var best *Media
	rank := 0
	for i := range b.Media {
		m := &b.Media[i]
		if r := jsonkit.MatchRange(m.Type, essence); r > rank {
			best, rank = m, r
		}
	}
	if best == nil {
		return nil, "", fmt.Errorf("%w: %s; send one of %s", idem.ErrUnsupportedMediaType, essence, declared(b))
	}
	if best.Decode != AsBytes && best.Decode != AsBinary {
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return nil, "", fmt.Errorf("%w: %s with charset %s; only UTF-8 is accepted", idem.ErrUnsupportedMediaType, essence, cs)
		}
	}
	return best, canonicalMedia(best, essence, params), nil
}

func declared(b *Body) string {
	ts := make([]string, len(b.Media))
	for i := range b.Media {
		ts[i] = b.Media[i].Type
	}
	return strings.Join(ts, ", ")
}

// canonicalMedia is a media type as the canonical form records it: the
// essence, and for bodies taken as bytes the parameters too (a charset
// changes what text bytes mean). Decoded bodies are recorded by what they
// decode to, so their parameters (a JSON charset, a multipart boundary)
// are left out.
func canonicalMedia(m *Media, essence string, params map[string]string) string {
	if m.Decode != AsBytes && m.Decode != AsBinary || len(params) == 0 {
		return essence
	}
	return mime.FormatMediaType(essence, lowerValues(params))
}

func lowerValues(params map[string]string) map[string]string {
	out := make(map[string]string, len(params))
	for k, v := range params {
		if k == "charset" {
			v = strings.ToLower(v)
		}
		out[k] = v
	}
	return out
}
