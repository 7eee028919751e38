package config

import (
	"fmt"
	"strings"
)

// FormatSize formats a byte count with one decimal: in decimal units (KB,
// MB, GB, TB, PB: powers of 1000) unless binary, then in binary ones (KiB,
// MiB, ...: powers of 1024). The CLI prints every size in the family the
// user wrote the size options in (IsBinarySize), decimal by default, so
// that XLACACHE_MAX_SIZE=200GB comes back as "200.0 GB".
func FormatSize(n int64, binary bool) string {
	base, suffix := 1000.0, "B"
	if binary {
		base, suffix = 1024, "iB"
	}
	if n < 0 || float64(n) < base {
		return fmt.Sprintf("%d B", n)
	}
	v, exp := float64(n)/base, 0
	for v >= base && exp < 4 {
		v /= base
		exp++
	}
	return fmt.Sprintf("%.1f %c%s", v, "KMGTP"[exp], suffix)
}

// IsBinarySize reports whether s, a size as ParseSize takes it, is written
// with a binary unit (KiB, MiB, GiB, TiB; or Ki, Mi, ...).
func IsBinarySize(s string) bool {
	t := strings.ToLower(strings.TrimSpace(s))
	return strings.HasSuffix(t, "ib") || strings.HasSuffix(t, "i")
}
