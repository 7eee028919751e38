package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseAge parses an age (prune --shared --older-than): a Go duration ("36h", "90m") or a whole or
// decimal number of days ("30d", "1.5d"); it must be positive.
func ParseAge(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		f, err := strconv.ParseFloat(days, 64)
		if err != nil || f <= 0 || f > 100*365 {
			return 0, fmt.Errorf("%q: want a positive number of days (30d) or a duration (36h)", s)
		}
		d = time.Duration(f * float64(24*time.Hour))
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q: want a positive number of days (30d) or a duration (36h)", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: the age must be positive", s)
	}
	return d, nil
}
