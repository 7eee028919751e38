// Package s3blob is the blob.Store of xlacache's shared tier on an
// S3-compatible object store (AWS S3, MinIO, versitygw, Ceph RGW, ...),
// built on minio-go.
//
// A Store maps slash-separated object names ("executables/<key>") below a
// bucket and prefix. Publishing is a conditional put (If-None-Match: *), so
// the first writer wins without any locking. The store itself only bounds
// connecting and waiting for response headers; the per-call timeout and the
// circuit breaker that keep an unreachable store from slowing compiles are
// blob.Guard's, configured from Config.Timeout and Config.Cooldown.
package s3blob

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/config"
)

// Defaults for Config fields left zero.
const (
	DefaultTimeout       = blob.DefaultTimeout
	DefaultCooldown      = blob.DefaultCooldown
	DefaultDialTimeout   = 5 * time.Second
	DefaultMaxObjectSize = config.DefaultSharedMaxObjectSize
	DefaultEndpoint      = "s3.amazonaws.com"
)

// Config says where the store is and how to reach it. ParseURL fills it
// from an s3:// URL and the usual AWS environment variables.
type Config struct {
	// Bucket and Prefix locate the objects; Prefix has no leading or
	// trailing slash and may be empty.
	Bucket, Prefix string
	// Endpoint is host[:port] of the S3 API.
	Endpoint string
	// Secure selects HTTPS (default) over plain HTTP.
	Secure bool
	// Region is the bucket's region; empty lets the client discover it.
	Region string
	// PathStyle forces path-style requests (http://host/bucket/key), which
	// most non-AWS servers want; by default minio-go decides from the host.
	PathStyle bool
	// Timeout bounds waiting for a response's headers here, and each whole
	// call in the blob.Guard the caller wraps the store in.
	Timeout time.Duration
	// DialTimeout bounds connecting, so a black-holed host costs little.
	DialTimeout time.Duration
	// Cooldown is how long blob.Guard skips the store after a failure.
	Cooldown time.Duration
	// MaxObjectSize bounds the objects Get and Open read
	// (DefaultMaxObjectSize when zero). The bound in force is lowered to
	// half the memory the process can still allocate, as
	// config.Options.EffectiveSharedMaxObjectSize does.
	MaxObjectSize int64
	// CABundle is a PEM file of extra trusted CAs (AWS_CA_BUNDLE).
	CABundle string
	// AccessKey, SecretKey and SessionToken, when AccessKey is set, are
	// used instead of the AWS credential chain (env, shared files, IAM).
	AccessKey, SecretKey, SessionToken string
}

var bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.\-_]{1,61}[a-z0-9]$`)

// ParseURL reads an XLACACHE_SHARED_URL of the form
//
//	s3://bucket[/prefix][?endpoint=URL&region=R&insecure=true&path-style=true&timeout=30s&cooldown=60s]
//
// and completes it from the environment the way AWS tools do:
// AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (endpoint), AWS_REGION or
// AWS_DEFAULT_REGION (region), AWS_CA_BUNDLE (extra CAs). Query parameters
// win over the environment. Credentials never come from the URL. getenv is
// os.Getenv in production.
func ParseURL(raw string, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("shared URL %q: %w", raw, err)
	}
	if u.Scheme != "s3" {
		return Config{}, fmt.Errorf("shared URL %q: scheme %q is not supported (want s3://bucket/prefix)", raw, u.Scheme)
	}
	if u.User != nil {
		return Config{}, fmt.Errorf("shared URL %q: credentials do not belong in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", redact(u))
	}
	cfg := Config{
		Bucket:        u.Host,
		Prefix:        strings.Trim(u.Path, "/"),
		Secure:        true,
		Timeout:       DefaultTimeout,
		DialTimeout:   DefaultDialTimeout,
		Cooldown:      DefaultCooldown,
		MaxObjectSize: DefaultMaxObjectSize,
		CABundle:      getenv("AWS_CA_BUNDLE"),
	}
	if !bucketRE.MatchString(cfg.Bucket) {
		return Config{}, fmt.Errorf("shared URL %q: %q is not a valid bucket name", raw, cfg.Bucket)
	}
	if cfg.Prefix != "" {
		if err := blob.ValidName(cfg.Prefix); err != nil {
			return Config{}, fmt.Errorf("shared URL %q: prefix: %w", raw, err)
		}
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "endpoint", "region", "insecure", "path-style", "timeout", "cooldown":
		default:
			return Config{}, fmt.Errorf("shared URL %q: unknown parameter %q (known: endpoint, region, insecure, path-style, timeout, cooldown)", raw, k)
		}
	}
	endpoint := first(q.Get("endpoint"), getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL"))
	if endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	} else if strings.Contains(endpoint, "://") {
		eu, err := url.Parse(endpoint)
		if err != nil {
			return Config{}, fmt.Errorf("shared URL %q: endpoint %q: %w", raw, endpoint, err)
		}
		switch eu.Scheme {
		case "http":
			cfg.Secure = false
		case "https":
		default:
			return Config{}, fmt.Errorf("shared URL %q: endpoint %q: scheme must be http or https", raw, endpoint)
		}
		if eu.Host == "" || (eu.Path != "" && eu.Path != "/") || eu.RawQuery != "" {
			return Config{}, fmt.Errorf("shared URL %q: endpoint %q must be scheme://host[:port] with no path", raw, endpoint)
		}
		cfg.Endpoint = eu.Host
	} else {
		cfg.Endpoint = endpoint
	}
	cfg.Region = first(q.Get("region"), getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"))
	boolParam := func(name string, dst *bool, invert bool) error {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("shared URL %q: %s=%q is not true or false", raw, name, v)
		}
		if invert {
			b = !b
		}
		*dst = b
		return nil
	}
	if err := boolParam("insecure", &cfg.Secure, true); err != nil {
		return Config{}, err
	}
	if err := boolParam("path-style", &cfg.PathStyle, false); err != nil {
		return Config{}, err
	}
	durParam := func(name string, dst *time.Duration) error {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("shared URL %q: %s=%q is not a positive duration such as 30s", raw, name, v)
		}
		*dst = d
		return nil
	}
	if err := durParam("timeout", &cfg.Timeout); err != nil {
		return Config{}, err
	}
	if err := durParam("cooldown", &cfg.Cooldown); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Redact returns raw without the user information a URL may carry, for
// logs; a URL that does not parse is replaced by a placeholder.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable URL>"
	}
	return redact(u)
}

func redact(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

var _ blob.Store = (*Store)(nil)

// Store is an open S3 store. It is safe for concurrent use.
type Store struct {
	cfg    Config
	client *minio.Client
	tr     *http.Transport
}

// Open returns a Store for cfg. It does not contact the server, so that an
// unreachable store never delays the start of a program; the first call
// finds out.
func Open(cfg Config) (*Store, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.Cooldown <= 0 {
		cfg.Cooldown = DefaultCooldown
	}
	if cfg.MaxObjectSize <= 0 {
		cfg.MaxObjectSize = DefaultMaxObjectSize
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	tr, err := transport(cfg)
	if err != nil {
		return nil, err
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
		&credentials.IAM{Client: &http.Client{Transport: tr, Timeout: cfg.DialTimeout}},
	})
	if cfg.AccessKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	}
	mo := &minio.Options{
		Creds:     creds,
		Secure:    cfg.Secure,
		Transport: blob.BoundBodies(tr, cfg.MaxObjectSize, objectBody),
		Region:    cfg.Region,
		// A few quick retries ride out a dropped connection; more would
		// only stretch the time an unreachable store costs.
		MaxRetries: 2,
	}
	if cfg.PathStyle {
		mo.BucketLookup = minio.BucketLookupPath
	}
	client, err := minio.New(cfg.Endpoint, mo)
	if err != nil {
		return nil, fmt.Errorf("shared store s3://%s/%s at %s: %w", cfg.Bucket, cfg.Prefix, cfg.Endpoint, err)
	}
	return &Store{cfg: cfg, client: client, tr: tr}, nil
}

func transport(cfg Config) (*http.Transport, error) {
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.DialTimeout,
		ResponseHeaderTimeout: cfg.Timeout,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
	if cfg.CABundle != "" {
		pem, err := os.ReadFile(cfg.CABundle)
		if err != nil {
			return nil, fmt.Errorf("AWS_CA_BUNDLE %q: %w", cfg.CABundle, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("AWS_CA_BUNDLE %q: no PEM certificates found", cfg.CABundle)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return tr, nil
}

// String names the store for logs (never credentials).
func (s *Store) String() string {
	scheme := "https"
	if !s.cfg.Secure {
		scheme = "http"
	}
	return fmt.Sprintf("s3://%s/%s (%s://%s)", s.cfg.Bucket, s.cfg.Prefix, scheme, s.cfg.Endpoint)
}

// Config returns the store's configuration.
func (s *Store) Config() Config { return s.cfg }

func (s *Store) key(name string) string {
	if s.cfg.Prefix == "" {
		return name
	}
	return s.cfg.Prefix + "/" + name
}

// Get returns the object's bytes, or an error wrapping blob.ErrNotExist,
// blob.ErrTooLarge (more than Config.MaxObjectSize bytes, found from the
// response headers before the body is read) or, for a failure to reach the
// store, the underlying error. The bytes are read into one buffer of the
// object's size.
func (s *Store) Get(ctx context.Context, name string) ([]byte, error) {
	rc, info, err := s.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := blob.ReadSized(rc, info, 0) // Open checked the size
	if err != nil {
		return nil, s.fail("get", name, err)
	}
	return b, nil
}

// Open returns the object's Info, from the headers of the response that
// carries its bytes, and a reader of at most that many bytes. An object
// larger than Config.MaxObjectSize is refused (blob.ErrTooLarge) from its
// Content-Length, before any of its body is read.
func (s *Store) Open(ctx context.Context, name string) (io.ReadCloser, blob.Info, error) {
	if err := blob.ValidName(name); err != nil {
		return nil, blob.Info{}, fmt.Errorf("open: %w", err)
	}
	// One GET, whose response headers give the size and ETag: the
	// Client's GetObject would send a HEAD first (its Object.Stat), two
	// requests per shared hit instead of one. The body stays unread until
	// the caller reads it.
	obj, oi, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.cfg.Bucket, s.key(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, blob.Info{}, s.fail("get", name, err)
	}
	info := blob.Info{Name: name, Size: oi.Size, ModTime: oi.LastModified, ETag: oi.ETag}
	if limit := s.limit(); info.Size < 0 || info.Size > limit {
		obj.Close()
		return nil, blob.Info{}, fmt.Errorf("get %s: %w: %d bytes, more than %d", name, blob.ErrTooLarge, info.Size, limit)
	}
	return &sizedReader{r: io.LimitReader(obj, info.Size), c: obj}, info, nil
}

// limit returns the bound on an object read now: Config.MaxObjectSize,
// lowered to half the memory the process can still allocate.
func (s *Store) limit() int64 {
	return config.Options{SharedMaxObjectSize: s.cfg.MaxObjectSize}.EffectiveSharedMaxObjectSize()
}

// sizedReader is an object's body limited to the size its headers gave.
type sizedReader struct {
	r io.Reader
	c io.Closer
}

func (r *sizedReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *sizedReader) Close() error               { return r.c.Close() }

// ReplaceIfMatch overwrites the object with data if its ETag is still etag:
// one conditional request (If-Match), so of concurrent replacers exactly
// one wins and the others get blob.ErrPrecondition. An absent object is
// blob.ErrPrecondition too (S3 answers 404 or 412); a server that ignored
// If-Match on an absent key would create it, which issue 12's probe of the
// server's conditional writes is there to find out.
func (s *Store) ReplaceIfMatch(ctx context.Context, name, etag string, data []byte) (string, error) {
	if err := blob.ValidName(name); err != nil {
		return "", fmt.Errorf("replace: %w", err)
	}
	if etag == "" || etag == "*" || strings.ContainsAny(etag, "\"\r\n") {
		return "", fmt.Errorf("replace %s on %s: %w: ETag %q is not one", name, s, blob.ErrPrecondition, etag)
	}
	opts := minio.PutObjectOptions{
		ContentType:      "application/octet-stream",
		DisableMultipart: true,
		SendContentMd5:   true,
	}
	opts.SetMatchETag(etag)
	ui, err := s.putObject(ctx, name, data, opts)
	if err == nil {
		return ui.ETag, nil
	}
	if err := classify(err); errors.Is(err, blob.ErrExist) || errors.Is(err, blob.ErrNotExist) {
		// Precondition failed, a conditional write in flight (409), or the
		// object gone: another writer got there first.
		return "", fmt.Errorf("replace %s on %s: %w: %w", name, s, blob.ErrPrecondition, err)
	}
	return "", s.fail("replace", name, err)
}

// PutIfAbsent stores data under name unless an object is already there, in
// which case it returns an error wrapping blob.ErrExist. The check and the
// write are one conditional request (If-None-Match: *), so of two
// concurrent writers exactly one wins.
func (s *Store) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	if err := blob.ValidName(name); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	opts := minio.PutObjectOptions{
		ContentType:      "application/octet-stream",
		DisableMultipart: true,
		SendContentMd5:   true,
	}
	opts.SetMatchETagExcept("*")
	if _, err := s.putObject(ctx, name, data, opts); err != nil {
		return s.fail("put", name, err)
	}
	return nil
}

// dirRaceRetries bounds how often putObject repeats a put that a
// filesystem-backed server refused because a concurrent delete removed the
// directory the new object goes in (see putObject).
const dirRaceRetries = 3

// putObject is one PutObject, repeated (at most dirRaceRetries times,
// after a short pause) while the server answers 409
// ExistingObjectIsDirectory. versitygw's posix backend, and servers like
// it, keep an object "a/b" as the file b in a directory a that the put
// creates and that a delete of the last object in it removes; a put whose
// directory such a delete removed between the server's mkdir and its link
// of the new file gets this answer although nothing is in the way
// (versity/versitygw#1988). The server answers before it evaluates the
// request's conditions and stores nothing, so repeating the request is
// safe; where a directory really is in the way, it fails the same way
// again and the error is returned.
func (s *Store) putObject(ctx context.Context, name string, data []byte, opts minio.PutObjectOptions) (minio.UploadInfo, error) {
	pause := 5 * time.Millisecond
	for try := 0; ; try++ {
		ui, err := s.client.PutObject(ctx, s.cfg.Bucket, s.key(name), bytes.NewReader(data), int64(len(data)), opts)
		if err == nil || try == dirRaceRetries || minio.ToErrorResponse(err).Code != "ExistingObjectIsDirectory" {
			return ui, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ui, err
		case <-t.C:
		}
		pause *= 4
	}
}

// Stat returns the object's size, modification time and ETag, or an error
// wrapping blob.ErrNotExist.
func (s *Store) Stat(ctx context.Context, name string) (blob.Info, error) {
	if err := blob.ValidName(name); err != nil {
		return blob.Info{}, fmt.Errorf("stat: %w", err)
	}
	oi, err := s.client.StatObject(ctx, s.cfg.Bucket, s.key(name), minio.StatObjectOptions{})
	if err != nil {
		return blob.Info{}, s.fail("stat", name, err)
	}
	return blob.Info{Name: name, Size: oi.Size, ModTime: oi.LastModified, ETag: oi.ETag}, nil
}

// List returns the objects (names relative to the store) under prefix,
// which is "" or a valid name optionally ending in "/", sorted by name.
// Objects a foreign tool stored under names that are not valid object
// names are left out: they are not ours to read.
func (s *Store) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	if err := blob.ValidPrefix(prefix); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	full := s.key(prefix)
	if prefix == "" && s.cfg.Prefix != "" {
		full = s.cfg.Prefix + "/"
	}
	base := ""
	if s.cfg.Prefix != "" {
		base = s.cfg.Prefix + "/"
	}
	var infos []blob.Info
	for obj := range s.client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: full, Recursive: true}) {
		if obj.Err != nil {
			return nil, s.fail("list", prefix, obj.Err)
		}
		rel, ok := strings.CutPrefix(obj.Key, base)
		if !ok || blob.ValidName(rel) != nil {
			continue
		}
		infos = append(infos, blob.Info{Name: rel, Size: obj.Size, ModTime: obj.LastModified, ETag: obj.ETag})
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	return infos, nil
}

// Delete removes the object; an absent object is not an error.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := blob.ValidName(name); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	err := s.client.RemoveObject(ctx, s.cfg.Bucket, s.key(name), minio.RemoveObjectOptions{})
	if err != nil && !errors.Is(classify(err), blob.ErrNotExist) {
		return s.fail("delete", name, err)
	}
	return nil
}

// Close releases idle connections.
func (s *Store) Close() error {
	s.tr.CloseIdleConnections()
	return nil
}

// fail wraps err, classified, with the operation and the store.
func (s *Store) fail(what, name string, err error) error {
	return fmt.Errorf("%s %s on %s: %w", what, name, s, classify(err))
}

// classify maps S3 error responses to blob's errors.
func classify(err error) error {
	if err == nil {
		return nil
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == minio.NoSuchKey:
		return fmt.Errorf("%w: %w", blob.ErrNotExist, err)
	case resp.StatusCode == http.StatusPreconditionFailed || resp.Code == minio.PreconditionFailed:
		return fmt.Errorf("%w: %w", blob.ErrExist, err)
	case resp.StatusCode == http.StatusConflict && resp.Code == "ConditionalRequestConflict":
		// Another conditional write to the same key is in flight: it will
		// win, which is what first-writer-wins asks for.
		return fmt.Errorf("%w: %w", blob.ErrExist, err)
	}
	return err
}
