package idemclient

import (
	"fmt"
	"net/url"
	"strings"
)

// HomeRegionHeader is the response header in which a server running in
// several regions names the region an idempotency key belongs to.
const HomeRegionHeader = "Idempotency-Home-Region"

// regions is what WithRegions configures.
type regions struct {
	home  string
	urls  map[string]string // as given
	roots map[string]string // escaped, base path added, no trailing slash
	err   error
}

// WithRegions sends calls to a service that runs in several regions, each
// with the base URL urls[name]; home is where a call's first attempt goes
// (the region nearest the caller), unless the call says otherwise
// (WithHomeRegion). Every retry of a call goes to the region its key
// belongs to: the region of its first attempt, or the one the server named
// in Idempotency-Home-Region. A 421 naming another region is sent there at
// once. The key's record lives in its home region and replicates to the
// others after a lag, so a retry sent elsewhere could run the call a
// second time; sent home it is replayed (docs/scaling.md, "Regions"). The
// base URL given to New is then only used for its base path.
func WithRegions(home string, urls map[string]string) Option {
	return func(c *Client) {
		r := &regions{home: home, urls: map[string]string{}}
		for k, v := range urls {
			r.urls[k] = v
		}
		if _, ok := urls[home]; !ok {
			r.err = fmt.Errorf("idemclient: WithRegions: home region %q has no URL", home)
		}
		c.regions = r
	}
}

// WithHomeRegion sends the call to region, the home of the key it carries
// (a Result.HomeRegion kept with the key). Without WithRegions it does
// nothing.
func WithHomeRegion(region string) CallOption { return func(c *call) { c.region = region } }

// resolve checks and normalises the region URLs as New does the base URL.
func (r *regions) resolve(base string) error {
	if r.err != nil {
		return r.err
	}
	r.roots = map[string]string{}
	for name, raw := range r.urls {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("idemclient: WithRegions: URL %q of region %q: want http(s)://host[:port][/prefix]", raw, name)
		}
		u.RawQuery, u.Fragment = "", ""
		root := strings.TrimSuffix(u.String(), "/")
		if base != "" && !strings.HasSuffix(strings.TrimSuffix(u.EscapedPath(), "/"), base) {
			root += base
		}
		r.roots[name] = root
	}
	return nil
}

// rootFor is the root URL of an attempt sent to region ("" or an unknown
// region: the base URL).
func (c *Client) rootFor(region string) string {
	if c.regions != nil {
		if root, ok := c.regions.roots[region]; ok {
			return root
		}
	}
	return c.root
}

// followHome points the call's next attempts at the region resp names as
// the key's home, reporting whether that moved them.
func (c *Client) followHome(cl *call, resp *Response) bool {
	if c.regions == nil || resp == nil {
		return false
	}
	home := resp.Header.Get(HomeRegionHeader)
	if _, ok := c.regions.roots[home]; !ok || home == cl.region {
		return false
	}
	cl.region = home
	return true
}
