package hostfill

import "sort"

// scopeRefs returns the packs of refs a host of runtime rt can use, and
// adds those it cannot to st.Skipped (by runtime) and those without a
// runtime to st.Untagged. An index that could not be read is kept: it
// holds no records, so nothing is fetched for it.
func scopeRefs(refs []indexRef, rt Runtime, st *FillStats) []indexRef {
	kept := refs[:0:0]
	byRuntime := map[Runtime]int{}
	for _, r := range refs {
		theirs := r.head.origin.Runtime
		if r.read && theirs.IsZero() {
			st.Untagged++
		}
		why := rt.Conflicts(theirs)
		if !r.read || len(why) == 0 {
			kept = append(kept, r)
			continue
		}
		i, ok := byRuntime[theirs]
		if !ok {
			i = len(st.Skipped)
			byRuntime[theirs] = i
			st.Skipped = append(st.Skipped, SkippedRuntime{Runtime: theirs, Why: why})
		}
		sk := &st.Skipped[i]
		sk.Packs++
		sk.Files += len(r.recs)
		sk.Bytes += r.packSize
	}
	sort.SliceStable(st.Skipped, func(i, j int) bool { return st.Skipped[i].Bytes > st.Skipped[j].Bytes })
	return kept
}

// SkippedPacks returns the packs, files and bytes skipped in all.
func (s FillStats) SkippedPacks() (packs, files int, bytes int64) {
	for _, k := range s.Skipped {
		packs += k.Packs
		files += k.Files
		bytes += k.Bytes
	}
	return packs, files, bytes
}
