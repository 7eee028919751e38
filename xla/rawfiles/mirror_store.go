package rawfiles

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
)

// read reads obj from the store. Its size, from the response headers, is
// checked against the bound (MirrorOptions.MaxObjectSize, lowered to half
// the memory the process can still allocate) before any of it is read: an
// object over it gives an error wrapping blob.ErrTooLarge.
func (m *Mirror) read(ctx context.Context, obj string) ([]byte, blob.Info, error) {
	limit := config.Options{SharedMaxObjectSize: m.opts.MaxObjectSize}.EffectiveSharedMaxObjectSize()
	rc, info, err := m.objs.Open(ctx, obj)
	if err != nil {
		return nil, blob.Info{}, err
	}
	defer rc.Close()
	data, err := blob.ReadSized(rc, info, limit)
	if err != nil {
		return nil, info, err
	}
	return data, info, nil
}

// verifyKernelPart checks a kernel cache part: well-formed, and named by
// the SHA-256 of its content as pushKernels names it.
func verifyKernelPart(obj string, payload []byte) error {
	if err := VerifyKernelFile(bytes.NewReader(payload)); err != nil {
		return err
	}
	sum := sha256.Sum256(payload)
	if obj != layout.XLAKernelPartObject(sum) {
		return errors.New("content does not match the part's name")
	}
	return nil
}

// repair checks the remote object r, found under the name of a local file
// whose sealed form is sealed, and replaces it with sealed when no host can
// use it: it fails to unseal or verify (verify, when not nil), or is over
// the size bound. The replace is conditional on the bad object's ETag, so
// an object another writer repaired or replaced meanwhile stays. An object
// whose ETag is the MD5 of sealed holds the same bytes (sealing is
// deterministic) and is not downloaded. It returns whether it replaced the
// object; an error is a failure of the store.
func (m *Mirror) repair(ctx context.Context, r blob.Info, sealed []byte, verify func(obj string, payload []byte) error) (bool, error) {
	sum := md5.Sum(sealed)
	if strings.Trim(r.ETag, `"`) == hex.EncodeToString(sum[:]) {
		return false, nil
	}
	etag := r.ETag
	data, info, err := m.read(ctx, r.Name)
	switch {
	case errors.Is(err, blob.ErrNotExist):
		return false, nil // removed since it was listed: a prune's decision
	case errors.Is(err, blob.ErrTooLarge):
	case err != nil:
		return false, fmt.Errorf("checking %s: %w", r.Name, err)
	default:
		payload, uerr := Unseal(r.Name, data, m.opts.SigningKey)
		if uerr == nil && (verify == nil || verify(r.Name, payload) == nil) {
			return false, nil
		}
		if errors.Is(uerr, ErrOtherKey) {
			return false, nil // good for the hosts with its key: never replaced
		}
		if info.ETag != "" {
			etag = info.ETag
		}
	}
	if etag == "" {
		return false, nil // nothing to make the replace conditional on
	}
	switch _, err := m.objs.ReplaceIfMatch(ctx, r.Name, etag, sealed); {
	case err == nil:
		return true, nil
	case errors.Is(err, blob.ErrPrecondition):
		return false, nil // another writer replaced or removed it first
	default:
		return false, fmt.Errorf("replacing damaged %s: %w", r.Name, err)
	}
}
