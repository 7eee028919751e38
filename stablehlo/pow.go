package stablehlo

import (
	"math"
	"math/big"
	"sync"
)

// pow64 is x**y for f64 rounded correctly (to nearest, from a 160-bit
// evaluation of exp(y·log x)) where math.Pow is not: Go's Pow can be tens
// of ULP off for fractional exponents, and the reference interpreter must
// agree with XLA's CPU results (glibc's pow is correctly rounded) on
// programs such as JAX's gamma sampler, which raise a uniform sample to
// 1/alpha. Special values (zeros, infinities, NaN, negative bases with
// non-integer exponents, exact powers of two) keep math.Pow's IEEE
// semantics.
func pow64(x, y float64) float64 {
	if x == 0 || y == 0 || x == 1 || math.IsInf(x, 0) || math.IsInf(y, 0) || x != x || y != y {
		return math.Pow(x, y)
	}
	neg := false
	if x < 0 {
		if y != math.Trunc(y) || math.Abs(y) >= 1<<53 {
			return math.Pow(x, y) // NaN, or an even power of a huge exponent
		}
		x = -x
		neg = math.Mod(y, 2) != 0
	}
	r := bigPow(x, y)
	if neg {
		return -r
	}
	return r
}

const powPrec = 160

var (
	powOnce sync.Once
	ln2Big  *big.Float
	// recip[n] is 1/n: the series multiply by it instead of dividing,
	// which is several times slower.
	recip [2 * powTerms]*big.Float
)

// powTerms bounds the terms of both series (they converge much sooner).
const powTerms = 100

func powInit() {
	powOnce.Do(func() {
		one := big.NewFloat(1).SetPrec(powPrec)
		for n := 1; n < len(recip); n++ {
			recip[n] = new(big.Float).SetPrec(powPrec).Quo(one, new(big.Float).SetPrec(powPrec).SetInt64(int64(n)))
		}
		// ln 2 = 2·atanh(1/3).
		ln2Big = bigAtanh2(recip[3])
	})
}

func bigLn2() *big.Float {
	powInit()
	return ln2Big
}

// bigAtanh2 returns 2·atanh(s) = s·2·Σ s^(2k)/(2k+1) for |s| < 0.2.
func bigAtanh2(s *big.Float) *big.Float {
	s2 := new(big.Float).SetPrec(powPrec).Mul(s, s)
	term := new(big.Float).SetPrec(powPrec).Set(s)
	sum := new(big.Float).SetPrec(powPrec).Set(s)
	tmp := new(big.Float).SetPrec(powPrec)
	for k := 1; k < powTerms; k++ {
		term.Mul(term, s2)
		tmp.Mul(term, recip[2*k+1])
		if tmp.Sign() == 0 || tmp.MantExp(nil)-sum.MantExp(nil) < -powPrec-4 {
			break
		}
		sum.Add(sum, tmp)
	}
	return sum.Mul(sum, big.NewFloat(2))
}

// bigPow evaluates x**y for finite x > 0 and finite y.
func bigPow(x, y float64) float64 {
	powInit()
	// log x = e·ln2 + log m with m in [1/√2, √2): log m = 2·atanh((m-1)/(m+1)).
	frac, e := math.Frexp(x) // x = frac·2^e, frac in [0.5, 1)
	if frac < math.Sqrt2/2 {
		frac *= 2
		e--
	}
	m := new(big.Float).SetPrec(powPrec).SetFloat64(frac)
	one := new(big.Float).SetPrec(powPrec).SetInt64(1)
	num := new(big.Float).SetPrec(powPrec).Sub(m, one)
	den := new(big.Float).SetPrec(powPrec).Add(m, one)
	logx := bigAtanh2(num.Quo(num, den))
	logx.Add(logx, new(big.Float).SetPrec(powPrec).Mul(bigLn2(), new(big.Float).SetInt64(int64(e))))
	t := logx.Mul(logx, new(big.Float).SetPrec(powPrec).SetFloat64(y))
	tf, _ := t.Float64()
	switch {
	case tf > 710: // beyond the largest finite result
		return math.Inf(1)
	case tf < -746: // below half the smallest subnormal
		return 0
	}
	// exp t = 2^k · exp r with r = t - k·ln2, |r| <= ln2/2 (Taylor series).
	k := math.Round(tf / math.Ln2)
	r := new(big.Float).SetPrec(powPrec).Sub(t, new(big.Float).SetPrec(powPrec).Mul(bigLn2(), new(big.Float).SetFloat64(k)))
	sum := new(big.Float).SetPrec(powPrec).SetInt64(1)
	term := new(big.Float).SetPrec(powPrec).SetInt64(1)
	for n := 1; n < powTerms; n++ {
		term.Mul(term, r)
		term.Mul(term, recip[n])
		if term.Sign() == 0 || term.MantExp(nil)-sum.MantExp(nil) < -powPrec-4 {
			break
		}
		sum.Add(sum, term)
	}
	sum.SetMantExp(sum, int(k))
	f, _ := sum.Float64() // nearest-even, subnormals included
	return f
}
