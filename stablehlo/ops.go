package stablehlo

// opClass groups ops that share parsing, shape rules and evaluation.
type opClass int

const (
	classUnary   opClass = iota + 1 // elementwise, one operand, same type
	classBinary                     // elementwise, two operands, same type
	classLogical                    // and/or/xor/not: integer or i1 only
	classOther                      // op-specific
)

// opInfo describes a supported op. floatOnly ops reject integer element
// types in the verifier.
type opInfo struct {
	class     opClass
	floatOnly bool
	intOnly   bool // integer or i1 only
	noBool    bool // with intOnly: integer only, i1 rejected
	// complex says whether complex operands are accepted; by default
	// they are for ops that are neither floatOnly nor intOnly.
	complex complexRule
}

// complexRule is how an elementwise op treats complex operands.
type complexRule int

const (
	complexDefault     complexRule = iota // accepted unless floatOnly or intOnly
	complexYes                            // accepted (a floatOnly op defined on complex too)
	complexUnsupported                    // the spec defines it; this implementation does not
)

// opTable is the supported op set; anything else is rejected by the parser
// with "unknown op".
var opTable = map[string]opInfo{
	// Elementwise unary.
	"negate":                {class: classUnary},
	"abs":                   {class: classUnary},
	"sign":                  {class: classUnary},
	"floor":                 {class: classUnary, floatOnly: true},
	"ceil":                  {class: classUnary, floatOnly: true},
	"round_nearest_even":    {class: classUnary, floatOnly: true},
	"round_nearest_afz":     {class: classUnary, floatOnly: true},
	"exponential":           {class: classUnary, floatOnly: true, complex: complexYes},
	"exponential_minus_one": {class: classUnary, floatOnly: true, complex: complexYes},
	"log":                   {class: classUnary, floatOnly: true, complex: complexYes},
	"log_plus_one":          {class: classUnary, floatOnly: true, complex: complexYes},
	"logistic":              {class: classUnary, floatOnly: true, complex: complexYes},
	"tanh":                  {class: classUnary, floatOnly: true, complex: complexYes},
	"sqrt":                  {class: classUnary, floatOnly: true, complex: complexYes},
	"rsqrt":                 {class: classUnary, floatOnly: true, complex: complexYes},
	"cbrt":                  {class: classUnary, floatOnly: true, complex: complexUnsupported},
	"cosine":                {class: classUnary, floatOnly: true, complex: complexYes},
	"sine":                  {class: classUnary, floatOnly: true, complex: complexYes},
	"tan":                   {class: classUnary, floatOnly: true, complex: complexYes},
	"not":                   {class: classLogical, intOnly: true},
	"popcnt":                {class: classUnary, intOnly: true, noBool: true},
	"count_leading_zeros":   {class: classUnary, intOnly: true, noBool: true},
	// chlo unary (float only).
	"chlo.acos":       {class: classUnary, floatOnly: true, complex: complexUnsupported},
	"chlo.acosh":      {class: classUnary, floatOnly: true, complex: complexUnsupported},
	"chlo.asin":       {class: classUnary, floatOnly: true, complex: complexUnsupported},
	"chlo.asinh":      {class: classUnary, floatOnly: true, complex: complexUnsupported},
	"chlo.atan":       {class: classUnary, floatOnly: true, complex: complexUnsupported},
	"chlo.atanh":      {class: classUnary, floatOnly: true, complex: complexUnsupported},
	"chlo.cosh":       {class: classUnary, floatOnly: true, complex: complexUnsupported},
	"chlo.sinh":       {class: classUnary, floatOnly: true, complex: complexUnsupported},
	"chlo.tan":        {class: classUnary, floatOnly: true, complex: complexUnsupported},
	"chlo.digamma":    {class: classUnary, floatOnly: true},
	"chlo.erf":        {class: classUnary, floatOnly: true},
	"chlo.erf_inv":    {class: classUnary, floatOnly: true},
	"chlo.erfc":       {class: classUnary, floatOnly: true},
	"chlo.lgamma":     {class: classUnary, floatOnly: true},
	"chlo.bessel_i0e": {class: classUnary, floatOnly: true},
	"chlo.bessel_i1e": {class: classUnary, floatOnly: true},
	// Elementwise binary.
	"add":             {class: classBinary},
	"subtract":        {class: classBinary},
	"multiply":        {class: classBinary},
	"divide":          {class: classBinary},
	"remainder":       {class: classBinary, complex: complexUnsupported},
	"power":           {class: classBinary},
	"maximum":         {class: classBinary, complex: complexUnsupported},
	"minimum":         {class: classBinary, complex: complexUnsupported},
	"atan2":           {class: classBinary, floatOnly: true, complex: complexUnsupported},
	"and":             {class: classLogical, intOnly: true},
	"or":              {class: classLogical, intOnly: true},
	"xor":             {class: classLogical, intOnly: true},
	"chlo.next_after": {class: classBinary, floatOnly: true},
	// Shifts (spec §shift_left, §shift_right_*): integer operands only.
	"shift_left":             {class: classBinary, intOnly: true, noBool: true},
	"shift_right_logical":    {class: classBinary, intOnly: true, noBool: true},
	"shift_right_arithmetic": {class: classBinary, intOnly: true, noBool: true},
	// Everything else.
	"constant":             {class: classOther},
	"iota":                 {class: classOther},
	"compare":              {class: classOther},
	"select":               {class: classOther},
	"clamp":                {class: classOther},
	"convert":              {class: classOther},
	"broadcast_in_dim":     {class: classOther},
	"reshape":              {class: classOther},
	"transpose":            {class: classOther},
	"slice":                {class: classOther},
	"concatenate":          {class: classOther},
	"pad":                  {class: classOther},
	"dot_general":          {class: classOther},
	"reduce":               {class: classOther},
	"custom_call":          {class: classOther},
	"call":                 {class: classOther},
	"return":               {class: classOther},
	"chlo.top_k":           {class: classOther},
	"is_finite":            {class: classOther},
	"bitcast_convert":      {class: classOther},
	"reduce_precision":     {class: classOther},
	"reverse":              {class: classOther},
	"dynamic_slice":        {class: classOther},
	"dynamic_update_slice": {class: classOther},
	"gather":               {class: classOther},
	"convolution":          {class: classOther},
	"triangular_solve":     {class: classOther},
	"cholesky":             {class: classOther},
	"rng_bit_generator":    {class: classOther},
	"scatter":              {class: classOther},
	"sort":                 {class: classOther},
	"reduce_window":        {class: classOther},
	"select_and_scatter":   {class: classOther},
	"complex":              {class: classOther},
	"real":                 {class: classOther},
	"imag":                 {class: classOther},
	"fft":                  {class: classOther},
	"while":                {class: classOther},
	"if":                   {class: classOther},
	"case":                 {class: classOther},
}

func knownOp(name string) bool {
	_, ok := opTable[name]
	return ok
}

// SupportedOps lists the IR names of every op the front end accepts.
func SupportedOps() []string {
	out := make([]string, 0, len(opTable))
	for k := range opTable {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}
