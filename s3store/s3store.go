// Package s3store is xlacache's shared tier on an S3-compatible object store
// (AWS S3, MinIO, versitygw, Ceph RGW, ...), built on minio-go.
//
// A Store maps slash-separated object names ("executables/<key>") below a
// bucket and prefix. Publishing is a conditional put (If-None-Match: *), so
// the first writer wins without any locking. Every call is bounded by a
// timeout, and a circuit breaker makes an unreachable or misconfigured store
// cost one timeout and one log line, after which calls fail fast for a
// cool-down period: a compile never waits on a broken shared tier.
package s3store

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Sentinel errors; callers test them with errors.Is.
var (
	// ErrNotExist: the object is absent.
	ErrNotExist = errors.New("s3store: object does not exist")
	// ErrExist: PutIfAbsent found the object already published (first
	// writer wins; not a failure).
	ErrExist = errors.New("s3store: object already exists")
	// ErrUnavailable: the store failed recently and is skipped until its
	// cool-down ends.
	ErrUnavailable = errors.New("s3store: shared store unavailable")
	// ErrTooLarge: an object is larger than Config.MaxObjectSize.
	ErrTooLarge = errors.New("s3store: object too large")
)

// Defaults for Config fields left zero.
const (
	DefaultTimeout       = 30 * time.Second
	DefaultCooldown      = 60 * time.Second
	DefaultDialTimeout   = 5 * time.Second
	DefaultMaxObjectSize = 4 << 30
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
	// Timeout bounds each call, including reading the object.
	Timeout time.Duration
	// DialTimeout bounds connecting, so a black-holed host costs little.
	DialTimeout time.Duration
	// Cooldown is how long the store is skipped after a failure.
	Cooldown time.Duration
	// MaxObjectSize bounds what Get reads into memory.
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
		if err := ValidName(cfg.Prefix); err != nil {
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

// ValidName checks an object name (or prefix) relative to the store: it
// must be a clean slash-separated relative path, so that it maps to exactly
// one object and, when mirrored to a local directory, cannot escape it.
func ValidName(name string) error {
	if name == "" {
		return errors.New("empty object name")
	}
	if len(name) > 900 {
		return fmt.Errorf("object name of %d bytes is too long", len(name))
	}
	if strings.ContainsAny(name, "\\\x00") {
		return fmt.Errorf("object name %q contains a backslash or NUL", name)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("object name %q has an empty, '.' or '..' segment", name)
		}
		for _, r := range seg {
			if r < 0x20 || r == 0x7f {
				return fmt.Errorf("object name %q contains a control character", name)
			}
		}
	}
	return nil
}

// Store is an open shared store. It is safe for concurrent use.
type Store struct {
	cfg    Config
	client *minio.Client
	tr     *http.Transport
	log    *slog.Logger
	br     breaker
}

// Open returns a Store for cfg. It does not contact the server, so that an
// unreachable store never delays the start of a program; the first call
// finds out.
func Open(cfg Config, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
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
		Transport: tr,
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
	s := &Store{cfg: cfg, client: client, tr: tr, log: logger}
	s.br.cooldown = cfg.Cooldown
	s.br.log = logger
	s.br.where = s.String()
	return s, nil
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

// call runs op under the breaker and the per-call timeout, and classifies
// its error.
func (s *Store) call(ctx context.Context, what, name string, op func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.br.allow(); err != nil {
		return fmt.Errorf("%s %s: %w", what, name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	err := op(cctx)
	switch {
	case err == nil, errors.Is(err, ErrNotExist), errors.Is(err, ErrExist), errors.Is(err, ErrTooLarge):
		s.br.success()
		if err == nil {
			return nil
		}
		return fmt.Errorf("%s %s: %w", what, name, err)
	case ctx.Err() != nil:
		// The caller gave up; that says nothing about the store.
		s.br.release()
		return fmt.Errorf("%s %s: %w", what, name, ctx.Err())
	default:
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %v: %w", s.cfg.Timeout, err)
		}
		s.br.failure(err)
		return fmt.Errorf("%s %s on %s: %w (%w)", what, name, s, ErrUnavailable, err)
	}
}

// Get returns the object's bytes, or an error wrapping ErrNotExist,
// ErrUnavailable or ErrTooLarge.
func (s *Store) Get(ctx context.Context, name string) ([]byte, error) {
	if err := ValidName(name); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	var data []byte
	err := s.call(ctx, "get", name, func(ctx context.Context) error {
		obj, err := s.client.GetObject(ctx, s.cfg.Bucket, s.key(name), minio.GetObjectOptions{})
		if err != nil {
			return classify(err)
		}
		defer obj.Close()
		b, err := io.ReadAll(io.LimitReader(obj, s.cfg.MaxObjectSize+1))
		if err != nil {
			return classify(err)
		}
		if int64(len(b)) > s.cfg.MaxObjectSize {
			return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, s.cfg.MaxObjectSize)
		}
		data = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return data, nil
}

// PutIfAbsent stores data under name unless an object is already there, in
// which case it returns an error wrapping ErrExist. The check and the write
// are one conditional request (If-None-Match: *), so of two concurrent
// writers exactly one wins.
func (s *Store) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	if err := ValidName(name); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	return s.call(ctx, "put", name, func(ctx context.Context) error {
		opts := minio.PutObjectOptions{
			ContentType:      "application/octet-stream",
			DisableMultipart: true,
			SendContentMd5:   true,
		}
		opts.SetMatchETagExcept("*")
		_, err := s.client.PutObject(ctx, s.cfg.Bucket, s.key(name), bytes.NewReader(data), int64(len(data)), opts)
		return classify(err)
	})
}

// List returns the names (relative to the store) of the objects under
// prefix, which is "" or a valid name optionally ending in "/".
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	if p := strings.TrimSuffix(prefix, "/"); p != "" {
		if err := ValidName(p); err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
	}
	var names []string
	err := s.call(ctx, "list", prefix, func(ctx context.Context) error {
		full := s.key(prefix)
		if prefix == "" && s.cfg.Prefix != "" {
			full = s.cfg.Prefix + "/"
		}
		base := ""
		if s.cfg.Prefix != "" {
			base = s.cfg.Prefix + "/"
		}
		for obj := range s.client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: full, Recursive: true}) {
			if obj.Err != nil {
				return classify(obj.Err)
			}
			rel, ok := strings.CutPrefix(obj.Key, base)
			if !ok || ValidName(rel) != nil {
				// Objects a foreign tool put here under odd names are
				// not ours to read.
				continue
			}
			names = append(names, rel)
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

// Close releases idle connections.
func (s *Store) Close() error {
	s.tr.CloseIdleConnections()
	return nil
}

// classify maps S3 error responses to the package's sentinels.
func classify(err error) error {
	if err == nil {
		return nil
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == minio.NoSuchKey:
		return fmt.Errorf("%w: %v", ErrNotExist, err)
	case resp.StatusCode == http.StatusPreconditionFailed || resp.Code == minio.PreconditionFailed:
		return fmt.Errorf("%w: %v", ErrExist, err)
	case resp.StatusCode == http.StatusConflict && resp.Code == "ConditionalRequestConflict":
		// Another conditional write to the same key is in flight: it will
		// win, which is what first-writer-wins asks for.
		return fmt.Errorf("%w: %v", ErrExist, err)
	}
	return err
}

// breaker skips the store for a cool-down after a failure. After the
// cool-down one call probes; the rest keep failing fast until it succeeds.
type breaker struct {
	mu        sync.Mutex
	cooldown  time.Duration
	openUntil time.Time
	open      bool
	probing   bool
	logged    bool
	log       *slog.Logger
	where     string
	lastErr   error
}

func (b *breaker) allow() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return nil
	}
	if b.probing || time.Now().Before(b.openUntil) {
		return fmt.Errorf("%w (last error: %v)", ErrUnavailable, b.lastErr)
	}
	b.probing = true
	return nil
}

func (b *breaker) success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open {
		b.log.Info("xlacache: shared store reachable again", "store", b.where)
	}
	b.open, b.probing, b.logged = false, false, false
}

// release ends a probe that says nothing about the store (the caller gave
// up), so that another call may probe.
func (b *breaker) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
}

func (b *breaker) failure(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open, b.probing = true, false
	b.openUntil = time.Now().Add(b.cooldown)
	b.lastErr = err
	if !b.logged {
		b.logged = true
		b.log.Warn("xlacache: shared store failed; using the local tier only", "store", b.where, "retry_in", b.cooldown, "err", err)
	} else {
		b.log.Debug("xlacache: shared store still failing", "store", b.where, "err", err)
	}
}
