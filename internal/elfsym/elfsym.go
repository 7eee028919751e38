// Package elfsym answers one question about a shared object without
// loading it: does it define a given function in its dynamic symbol
// table? PJRT plugins are found this way (they define GetPjrtApi), both
// by xla.Prepare and by the tests that look for installed plugins.
package elfsym

import "debug/elf"

// DefinesFunc reports whether the ELF file at path defines the function
// name in its dynamic symbol table. Only the symbol tables are read; a
// file that is not ELF, or cannot be read, defines nothing.
func DefinesFunc(path, name string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return false
	}
	for _, s := range syms {
		if s.Name == name && s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			return true
		}
	}
	return false
}
