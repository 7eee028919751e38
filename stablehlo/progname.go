package stablehlo

import (
	"path/filepath"
	"strings"
)

// ProgramName is the module name a compile of the program file at path
// uses (xlacache run and explain share it so that explain finds what run
// stored): the module's @name, else the file name without its extension.
// m may be nil (the file did not parse).
func ProgramName(m *Module, path string) string {
	if m != nil && m.Name != "" {
		return m.Name
	}
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}
