// Package gcsblob is the blob.Store of xlacache's shared tier on Google
// Cloud Storage, built on the official client (cloud.google.com/go/storage)
// over its JSON API.
//
// A Store maps slash-separated object names ("executables/<key>") below a
// bucket and prefix. An object's ETag, for blob's purposes, is its GCS
// generation written as a decimal number: publishing is a write with the
// precondition ifGenerationMatch=0 (the object does not exist), so the
// first writer wins without any locking, and ReplaceIfMatch is a write
// with ifGenerationMatch=<generation>. Leases, single-flight, retention,
// packs and the probe build on those two as they do on S3.
//
// Credentials are the client's default (Application Default Credentials:
// GOOGLE_APPLICATION_CREDENTIALS, gcloud's file, the metadata server), or
// none at all when STORAGE_EMULATOR_HOST names an emulator; a host with
// neither gets an error, never anonymous access. Finding the credentials
// may ask the metadata server, so it happens on the first call, bounded by
// that call's context, not in Open. The store itself only bounds
// connecting and waiting for response headers; the per-call timeout and
// the circuit breaker are blob.Guard's, configured from Config.Timeout and
// Config.Cooldown.
package gcsblob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/auth/httptransport"
	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/config"
)

// Defaults for Config fields left zero.
const (
	DefaultTimeout       = blob.DefaultTimeout
	DefaultCooldown      = blob.DefaultCooldown
	DefaultDialTimeout   = 5 * time.Second
	DefaultMaxObjectSize = config.DefaultSharedMaxObjectSize
)

// EnvEmulatorHost is the variable the official clients read to talk to a
// GCS emulator (host:port or a URL) without credentials.
const EnvEmulatorHost = "STORAGE_EMULATOR_HOST"

// Config says where the store is and how to reach it. ParseURL fills it
// from a gs:// URL and the environment.
type Config struct {
	// Bucket and Prefix locate the objects; Prefix has no leading or
	// trailing slash and may be empty.
	Bucket, Prefix string
	// Emulator is the STORAGE_EMULATOR_HOST in force: the JSON API is
	// reached there, without credentials. Empty for real GCS.
	Emulator string
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
}

// bucketRE is GCS's rule for bucket names (3 to 63 characters, or up to
// 222 with dots), loosely: the server refuses what slips through.
var bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$`)

// ParseURL reads an XLACACHE_SHARED_URL of the form
//
//	gs://bucket[/prefix][?timeout=30s&cooldown=60s]
//
// and STORAGE_EMULATOR_HOST from the environment. Credentials never come
// from the URL. getenv is os.Getenv in production.
func ParseURL(raw string, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("shared URL %q: %w", raw, err)
	}
	if u.Scheme != "gs" {
		return Config{}, fmt.Errorf("shared URL %q: scheme %q is not gs", raw, u.Scheme)
	}
	if u.User != nil {
		c := *u
		c.User = nil
		return Config{}, fmt.Errorf("shared URL %q: credentials do not belong in the URL; use Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud auth application-default login, or the metadata server)", c.String())
	}
	cfg := Config{
		Bucket:        u.Host,
		Prefix:        strings.Trim(u.Path, "/"),
		Emulator:      getenv(EnvEmulatorHost),
		Timeout:       DefaultTimeout,
		DialTimeout:   DefaultDialTimeout,
		Cooldown:      DefaultCooldown,
		MaxObjectSize: DefaultMaxObjectSize,
	}
	if !bucketRE.MatchString(cfg.Bucket) || strings.Contains(cfg.Bucket, "..") {
		return Config{}, fmt.Errorf("shared URL %q: %q is not a valid bucket name", raw, cfg.Bucket)
	}
	if cfg.Prefix != "" {
		if err := blob.ValidName(cfg.Prefix); err != nil {
			return Config{}, fmt.Errorf("shared URL %q: prefix: %w", raw, err)
		}
	}
	if cfg.Emulator != "" {
		if _, err := emulatorEndpoint(cfg.Emulator); err != nil {
			return Config{}, fmt.Errorf("%s=%q: %w", EnvEmulatorHost, cfg.Emulator, err)
		}
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "timeout", "cooldown":
		default:
			return Config{}, fmt.Errorf("shared URL %q: unknown parameter %q (known: timeout, cooldown)", raw, k)
		}
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

// emulatorEndpoint is the JSON API's base URL on an emulator named as
// STORAGE_EMULATOR_HOST is (host:port, or http[s]://host:port), the way
// the client library reads it.
func emulatorEndpoint(host string) (string, error) {
	u := &url.URL{Scheme: "http", Host: host}
	if strings.Contains(host, "://") {
		var err error
		if u, err = url.Parse(host); err != nil {
			return "", err
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return "", fmt.Errorf("scheme must be http or https")
		}
	}
	if u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("want host:port or scheme://host:port")
	}
	u.Path = "/storage/v1/"
	return u.String(), nil
}

var _ blob.Store = (*Store)(nil)

// Store is an open GCS store. It is safe for concurrent use.
type Store struct {
	cfg Config
	tr  *http.Transport

	mu     sync.Mutex
	conn   *connection // the current or last attempt to make the client
	closed bool
}

// connection is one attempt to make the client: done is closed when client
// or err is set.
type connection struct {
	done   chan struct{}
	client *storage.Client
	err    error
}

// Open returns a Store for cfg. It contacts nothing, not even the
// metadata server for credentials, so that an unreachable store never
// delays the start of a program; the first call finds out.
func Open(cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("gcs store: no bucket")
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
	if cfg.Emulator != "" {
		if _, err := emulatorEndpoint(cfg.Emulator); err != nil {
			return nil, fmt.Errorf("gcs store: %s=%q: %w", EnvEmulatorHost, cfg.Emulator, err)
		}
	}
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
		// Bytes as stored: a body the transport decompressed would not be
		// the size the headers announced.
		DisableCompression: true,
		ForceAttemptHTTP2:  true,
	}
	return &Store{cfg: cfg, tr: tr}, nil
}

// String names the store for logs (never credentials).
func (s *Store) String() string {
	if s.cfg.Emulator != "" {
		return fmt.Sprintf("gs://%s/%s (emulator %s)", s.cfg.Bucket, s.cfg.Prefix, s.cfg.Emulator)
	}
	return fmt.Sprintf("gs://%s/%s", s.cfg.Bucket, s.cfg.Prefix)
}

// Config returns the store's configuration.
func (s *Store) Config() Config { return s.cfg }

// bucket returns the bucket's handle, making the client on the first call
// (again after a failed attempt): waiting for it is bounded by ctx, and a
// caller that gives up leaves the attempt to finish for the next one.
func (s *Store) bucket(ctx context.Context) (*storage.BucketHandle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: %w: store closed", s, blob.ErrUnavailable)
	}
	c := s.conn
	if c == nil || (isDone(c.done) && c.err != nil) {
		c = &connection{done: make(chan struct{})}
		s.conn = c
		go func() {
			c.client, c.err = s.newClient()
			close(c.done)
		}()
	}
	s.mu.Unlock()
	select {
	case <-c.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c.err != nil {
		return nil, c.err
	}
	return c.client.Bucket(s.cfg.Bucket), nil
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// newClient makes the storage client: on an emulator without credentials,
// otherwise with Application Default Credentials, whose absence is an
// error rather than anonymous access.
func (s *Store) newClient() (*storage.Client, error) {
	base := blob.BoundBodies(s.tr, s.cfg.MaxObjectSize, objectBody)
	opts := []option.ClientOption{storage.WithJSONReads()}
	if s.cfg.Emulator != "" {
		ep, err := emulatorEndpoint(s.cfg.Emulator)
		if err != nil {
			return nil, err
		}
		opts = append(opts, option.WithoutAuthentication(), option.WithEndpoint(ep),
			option.WithHTTPClient(&http.Client{Transport: base}))
	} else {
		creds, err := credentials.DetectDefault(&credentials.DetectOptions{Scopes: []string{storage.ScopeReadWrite}})
		if err != nil {
			return nil, fmt.Errorf("%s: no Google credentials (Application Default Credentials: set GOOGLE_APPLICATION_CREDENTIALS, run gcloud auth application-default login, or run on GCP): %w", s, err)
		}
		hc, err := httptransport.NewClient(&httptransport.Options{Credentials: creds, BaseRoundTripper: base})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		opts = append(opts, option.WithAuthCredentials(creds), option.WithHTTPClient(hc))
	}
	// The client's own context only serves making it: no request is sent.
	client, err := storage.NewClient(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	// A few quick retries ride out a dropped connection or a 429/503;
	// more would only stretch the time an unreachable store costs (the
	// guard's timeout bounds them all). Conditional writes count as
	// idempotent, so they are retried too: a retry of a write whose
	// answer was lost finds its own object and reports the precondition
	// failed, which costs a lease or a publish, never a wrong object.
	client.SetRetry(storage.WithMaxAttempts(3), storage.WithBackoff(gax.Backoff{
		Initial: 50 * time.Millisecond, Max: time.Second, Multiplier: 3,
	}))
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		client.Close()
		return nil, fmt.Errorf("%s: %w: store closed", s, blob.ErrUnavailable)
	}
	return client, nil
}

func (s *Store) key(name string) string {
	if s.cfg.Prefix == "" {
		return name
	}
	return s.cfg.Prefix + "/" + name
}

// limit returns the bound on an object read now: Config.MaxObjectSize,
// lowered to half the memory the process can still allocate.
func (s *Store) limit() int64 {
	return config.Options{SharedMaxObjectSize: s.cfg.MaxObjectSize}.EffectiveSharedMaxObjectSize()
}

// etag is a generation as blob's ETag.
func etag(gen int64) string { return strconv.FormatInt(gen, 10) }

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

// Open returns the object's Info, from the headers of the one GET that
// carries its bytes (size, generation, time), and a reader of at most that
// many bytes. An object larger than Config.MaxObjectSize is refused
// (blob.ErrTooLarge) from its headers, before any of its body is read.
// Our objects are stored without a Content-Encoding; one a foreign tool
// stored gzip-encoded would be decompressed by the server on the way, and
// its bytes then no longer match the size announced: ReadSized, and
// the caller's verification after it, refuse it.
func (s *Store) Open(ctx context.Context, name string) (io.ReadCloser, blob.Info, error) {
	if err := blob.ValidName(name); err != nil {
		return nil, blob.Info{}, fmt.Errorf("open: %w", err)
	}
	b, err := s.bucket(ctx)
	if err != nil {
		return nil, blob.Info{}, s.fail("get", name, err)
	}
	r, err := b.Object(s.key(name)).NewReader(ctx)
	if err != nil {
		return nil, blob.Info{}, s.fail("get", name, err)
	}
	info := blob.Info{Name: name, Size: r.Attrs.Size, ModTime: r.Attrs.LastModified, ETag: etag(r.Attrs.Generation)}
	if limit := s.limit(); info.Size < 0 || info.Size > limit {
		r.Close()
		return nil, blob.Info{}, fmt.Errorf("get %s: %w: %d bytes, more than %d", name, blob.ErrTooLarge, info.Size, limit)
	}
	if r.Attrs.Generation <= 0 {
		r.Close()
		return nil, blob.Info{}, s.fail("get", name, errors.New("response carries no generation"))
	}
	return &sizedReader{r: io.LimitReader(r, info.Size), c: r}, info, nil
}

// sizedReader is an object's body limited to the size its headers gave.
type sizedReader struct {
	r io.Reader
	c io.Closer
}

func (r *sizedReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *sizedReader) Close() error               { return r.c.Close() }

// write is one upload of data to name under cond, in one request (no
// resumable session: objects are small enough, and a session would double
// the requests per publish), with its CRC32C for the server to check. It
// returns the new object's generation.
func (s *Store) write(ctx context.Context, name string, cond storage.Conditions, data []byte) (int64, error) {
	b, err := s.bucket(ctx)
	if err != nil {
		return 0, err
	}
	w := b.Object(s.key(name)).If(cond).NewWriter(ctx)
	w.ChunkSize = 0
	w.ContentType = "application/octet-stream"
	w.CRC32C = crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	w.SendCRC32C = true
	_, werr := io.Copy(w, bytes.NewReader(data))
	if err := w.Close(); err != nil {
		return 0, err
	}
	if werr != nil {
		return 0, werr
	}
	attrs := w.Attrs()
	if attrs == nil || attrs.Generation <= 0 {
		return 0, errors.New("the server's answer carries no generation")
	}
	return attrs.Generation, nil
}

// ReplaceIfMatch overwrites the object with data if its generation is
// still etag: one conditional write (ifGenerationMatch), so of concurrent
// replacers exactly one wins and the others get blob.ErrPrecondition. An
// absent object fails the precondition too and is not created.
func (s *Store) ReplaceIfMatch(ctx context.Context, name, tag string, data []byte) (string, error) {
	if err := blob.ValidName(name); err != nil {
		return "", fmt.Errorf("replace: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("replace %s: %w", name, err)
	}
	gen, err := strconv.ParseInt(tag, 10, 64)
	if err != nil || gen <= 0 {
		return "", fmt.Errorf("replace %s on %s: %w: ETag %q is not a generation", name, s, blob.ErrPrecondition, tag)
	}
	newGen, err := s.write(ctx, name, storage.Conditions{GenerationMatch: gen}, data)
	if err == nil {
		return etag(newGen), nil
	}
	if code := httpStatus(err); code == http.StatusPreconditionFailed || code == http.StatusNotFound {
		// The object changed or went: another writer got there first.
		return "", fmt.Errorf("replace %s on %s: %w: %w", name, s, blob.ErrPrecondition, err)
	}
	return "", s.fail("replace", name, err)
}

// PutIfAbsent stores data under name unless an object is already there, in
// which case it returns an error wrapping blob.ErrExist. The check and the
// write are one conditional request (ifGenerationMatch=0), so of two
// concurrent writers exactly one wins.
func (s *Store) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	if err := blob.ValidName(name); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s: %w", name, err)
	}
	if _, err := s.write(ctx, name, storage.Conditions{DoesNotExist: true}, data); err != nil {
		return s.fail("put", name, err)
	}
	return nil
}

// Stat returns the object's size, time and generation, or an error
// wrapping blob.ErrNotExist.
func (s *Store) Stat(ctx context.Context, name string) (blob.Info, error) {
	if err := blob.ValidName(name); err != nil {
		return blob.Info{}, fmt.Errorf("stat: %w", err)
	}
	b, err := s.bucket(ctx)
	if err != nil {
		return blob.Info{}, s.fail("stat", name, err)
	}
	a, err := b.Object(s.key(name)).Attrs(ctx)
	if err != nil {
		return blob.Info{}, s.fail("stat", name, err)
	}
	return blob.Info{Name: name, Size: a.Size, ModTime: a.Updated, ETag: etag(a.Generation)}, nil
}

// List returns the objects (names relative to the store) under prefix,
// which is "" or a valid name optionally ending in "/", sorted by name.
// Objects a foreign tool stored under names that are not valid object
// names are left out: they are not ours to read.
func (s *Store) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	if err := blob.ValidPrefix(prefix); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	b, err := s.bucket(ctx)
	if err != nil {
		return nil, s.fail("list", prefix, err)
	}
	full := s.key(prefix)
	base := ""
	if s.cfg.Prefix != "" {
		base = s.cfg.Prefix + "/"
		if prefix == "" {
			full = base
		}
	}
	q := &storage.Query{Prefix: full}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Generation", "Updated"}); err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	var infos []blob.Info
	it := b.Objects(ctx, q)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, s.fail("list", prefix, err)
		}
		rel, ok := strings.CutPrefix(a.Name, base)
		if !ok || blob.ValidName(rel) != nil {
			continue
		}
		infos = append(infos, blob.Info{Name: rel, Size: a.Size, ModTime: a.Updated, ETag: etag(a.Generation)})
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
	b, err := s.bucket(ctx)
	if err != nil {
		return s.fail("delete", name, err)
	}
	err = b.Object(s.key(name)).Delete(ctx)
	if err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return s.fail("delete", name, err)
	}
	return nil
}

// Close releases the client and idle connections. A call in flight may
// still finish; later calls fail with blob.ErrUnavailable.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	c := s.conn
	s.mu.Unlock()
	var err error
	if c != nil && isDone(c.done) && c.client != nil {
		err = c.client.Close()
	}
	s.tr.CloseIdleConnections()
	return err
}

// fail wraps err, classified, with the operation and the store.
func (s *Store) fail(what, name string, err error) error {
	return fmt.Errorf("%s %s on %s: %w", what, name, s, classify(err))
}

// httpStatus is the HTTP status of a GCS error response, 0 for an error
// that is not one.
func httpStatus(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// classify maps GCS error responses to blob's errors.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrObjectNotExist):
		return fmt.Errorf("%w: %w", blob.ErrNotExist, err)
	case httpStatus(err) == http.StatusPreconditionFailed:
		return fmt.Errorf("%w: %w", blob.ErrExist, err)
	}
	return err
}
