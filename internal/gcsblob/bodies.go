package gcsblob

import (
	"fmt"
	"io"
	"net/http"
)

// maxControlBody bounds the body of every response that is not an
// object's bytes: listings, object metadata, errors. A List page of 1,000
// objects with the few fields the store asks for is well under 1 MiB of
// JSON.
const maxControlBody = 16 << 20

// boundedBodies is the store's HTTP transport: it bounds what the client
// library may read from any response body, so that a server (or anything
// between it and this host) answering a List with an endless body costs
// an error after a few megabytes, not memory until the timeout. The
// client library decodes listings and errors whole; Open checks an
// object's size from its headers before reading and reads it through its
// own bound, so object bodies (alt=media) get the object bound plus slack
// here.
type boundedBodies struct {
	rt        http.RoundTripper
	maxObject int64
}

// RoundTrip implements http.RoundTripper.
func (b boundedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	limit := int64(maxControlBody)
	if req.Method == http.MethodGet && resp.StatusCode/100 == 2 && req.URL.Query().Get("alt") == "media" {
		limit = max(limit, b.maxObject+1<<20)
	}
	resp.Body = &limitedBody{rc: resp.Body, left: limit, limit: limit, what: req.Method + " " + req.URL.Path}
	return resp, nil
}

// limitedBody fails a read past limit bytes instead of returning them.
type limitedBody struct {
	rc    io.ReadCloser
	left  int64
	limit int64
	what  string
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells an endless body from one that ends at
		// exactly the limit.
		var one [1]byte
		n, err := l.rc.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("response to %s: body longer than %d bytes", l.what, l.limit)
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedBody) Close() error { return l.rc.Close() }
