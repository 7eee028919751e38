package jobrun

import (
	"context"
	"fmt"
	"os"

	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/xla"
)

// maxMismatchLines bounds the report lines naming JAX mismatches: one per
// module, and a count of the rest.
const maxMismatchLines = 5

// scope works out this host's runtime before the fill, so that the fill
// skips packs of other runtimes and the packs published carry it.
func (r *run) scope(ctx context.Context) {
	if r.root == nil || r.store == nil {
		return
	}
	o := hostfill.Origin{Runtime: r.detectRuntime(ctx)}
	o.Host, _ = os.Hostname()
	if err := o.Validate(); err != nil {
		// A tag or host name that cannot be recorded: nothing is scoped
		// or recorded, as before origins.
		r.logs.Warn("origin:runtime", "xlacache exec: this host's runtime cannot be recorded; fills are not scoped", "err", err)
		o = hostfill.Origin{}
	}
	r.o.Origin = o
	r.rep.Runtime = o.Runtime
	r.log.Debug("xlacache exec: runtime", "runtime", r.rep.Runtime.String())
}

// reportSkipped logs what the fill skipped, one line per runtime.
func (r *run) reportSkipped(st hostfill.FillStats) {
	for _, sk := range st.Skipped {
		r.log.Info(fmt.Sprintf("xlacache exec: skipped %d pack%s (%s, %d files) of runtime %s (this host: %s)",
			sk.Packs, plural(sk.Packs), fmtMB(sk.Bytes), sk.Files, sk.Runtime, r.o.Origin.Runtime),
			"differs", differences(sk.Why))
	}
	if st.Untagged > 0 && !r.o.Origin.Runtime.IsZero() {
		r.log.Debug("xlacache exec: packs without a runtime filled as before", "packs", st.Untagged)
	}
}

// recordSettings records, once the command's environment is known, the
// settings JAX hashes into its keys: in the packs this process publishes
// and, for `xlacache explain`, as this host's origin.
func (r *run) recordSettings(cmdEnv []string) {
	if r.root == nil || r.plain || (r.j.Target != xla.TargetJAX && r.j.Target != xla.TargetAll) {
		return
	}
	o := r.o.Origin
	o.Settings = jaxSettings(cmdEnv, r.opts.ProcessIndex, o.Runtime.JAXLib)
	if err := o.Validate(); err != nil {
		r.logs.Warn("origin:settings", "xlacache exec: JAX's settings cannot be recorded in the packs published; explanations will not name them", "err", err)
		o.Settings = nil
	}
	r.o.Origin = o
	if r.rep.Leader {
		if err := hostfill.SaveLocalOrigin(r.o, o); err != nil {
			r.logs.Warn("origin:save", "xlacache exec: recording this host's settings failed; explain cannot compare with them", "err", err)
		}
	}
}

// explainJAX, on the host's leader once the command has exited, names
// for each module JAX compiled here (the entries endJAX found written
// during the run) that another host had published which recorded setting
// differs.
func (r *run) explainJAX(ctx context.Context) {
	if r.root == nil || r.rep.JAX == nil || len(r.rep.JAX.Written) == 0 || r.o.Origin.Settings == nil {
		return
	}
	ms, err := FindJAXMismatches(ctx, r.root, r.rep.JAX.Written, r.o.Origin)
	if err != nil {
		r.log.Debug("xlacache exec: comparing JAX's entries with the published ones failed", "err", err)
		return
	}
	r.rep.JAXMismatches = ms
	for i, m := range ms {
		if i == maxMismatchLines {
			r.log.Info(fmt.Sprintf("xlacache exec: %d more modules compiled here that other hosts had published (xlacache explain MODULE names what differs)", len(ms)-i))
			break
		}
		r.log.Info("xlacache exec: " + m.String())
	}
}

func differences(ds []hostfill.Difference) string {
	s := ""
	for i, d := range ds {
		if i > 0 {
			s += "; "
		}
		s += d.String()
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// fmtMB writes a size for the report: MB, or kB below 1 MB.
func fmtMB(b int64) string {
	if b < 1e6 {
		return fmt.Sprintf("%.1f kB", float64(b)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(b)/1e6)
}
