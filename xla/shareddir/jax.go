package shareddir

import (
	"context"

	"github.com/xlacache/xlacache/xla/jaxcache"
)

// ListJAX scans the JAX entries in dir and lists them, most recently used
// first (jaxcache.List).
func ListJAX(ctx context.Context, dir string) ([]jaxcache.Listing, error) {
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return nil, err
	}
	return jaxcache.List(ctx, d)
}

// VerifyJAX checks the JAX entries and XLA's raw files in dir: it returns
// the scanned directory, the result, its JSON form and the number of
// damaged files that are not possibly in flight.
func VerifyJAX(ctx context.Context, dir string) (*jaxcache.Dir, jaxcache.VerifyResult, JAXVerifyReport, int, error) {
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return nil, jaxcache.VerifyResult{}, JAXVerifyReport{}, 0, err
	}
	r, err := jaxcache.Verify(ctx, d, jaxcache.VerifyOptions{})
	if err != nil {
		return nil, jaxcache.VerifyResult{}, JAXVerifyReport{}, 0, err
	}
	rep, bad := NewJAXVerifyReport(r)
	return d, r, rep, bad, nil
}

// ExplainJAX explains query (a JAX key or module name) against the JAX
// entries in dir, and gives the JSON form (of an empty explanation when
// it fails).
func ExplainJAX(ctx context.Context, dir, query string) (jaxcache.Explanation, JAXExplainReport, error) {
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return jaxcache.Explanation{}, NewJAXExplainReport(query, jaxcache.Explanation{}), err
	}
	ex, err := jaxcache.Explain(ctx, d, query)
	if err != nil {
		return jaxcache.Explanation{}, NewJAXExplainReport(query, jaxcache.Explanation{}), err
	}
	return ex, NewJAXExplainReport(query, ex), nil
}
