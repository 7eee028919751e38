package blob

import (
	"fmt"
	"io"
	"net/http"
)

// MaxControlBody bounds the body of every HTTP response of a store that is
// not an object's bytes: listings, metadata, errors, bucket location,
// multipart answers. A List page of 1,000 names is well under 1 MiB.
const MaxControlBody = 16 << 20

// BoundBodies wraps rt, an HTTP store's transport, so that the client
// library can read no response body past a bound: a server (or anything
// between it and this host) answering a List with an endless body costs an
// error after a few megabytes, not memory until the timeout. Client
// libraries buffer listings and errors whole; a store checks an object's
// size from its headers before reading and reads it through its own
// bound, so a response isObject says carries an object's bytes gets
// maxObject plus 1 MiB of slack here, every other one MaxControlBody.
func BoundBodies(rt http.RoundTripper, maxObject int64, isObject func(*http.Request, *http.Response) bool) http.RoundTripper {
	return boundedBodies{rt: rt, maxObject: maxObject, isObject: isObject}
}

type boundedBodies struct {
	rt        http.RoundTripper
	maxObject int64
	isObject  func(*http.Request, *http.Response) bool
}

// RoundTrip implements http.RoundTripper.
func (b boundedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	limit := int64(MaxControlBody)
	if b.isObject(req, resp) {
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
