// fadsl CPU runtime: writing the executed-instruction record (README "Executed-instruction
// record"; the rows are collected by the per-call hook in core.h / site.h).
//
// On when the environment variable FADSL_RECORD names a file: at the end of the launch the
// runtime writes every core's rows there, through <path>.tmp and a rename, so a reader never sees
// half a record. Text, tab-separated, one header line naming the columns, `#` lines are comments,
// `-` where a column does not apply. fadsl/backends/sim/record.py parses it; its tests pin the
// format.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core.h"

namespace fadsl_rt {

constexpr const char* kRecordColumns =
    "core\tblock\tsub\tseq\tpipe\tapi\tfile\tline\telems\trepeats\tbytes\tsrc\tdst\tdtype\tm\tk\tn\tblocks\t"
    "blocklen\tgm\tgmoff\tgmend\tevent\tid\tmode\tflag\tfrom\tqueue";
constexpr int kRecordVersion = 2;

inline const char* RecordPath() {
    const char* p = std::getenv("FADSL_RECORD");
    return (p && *p) ? p : nullptr;
}
inline const char* RecPipe(int8_t p) {
    switch (p) {
        case PIPE_S: return "S";
        case PIPE_V: return "V";
        case PIPE_M: return "M";
        case PIPE_MTE1: return "MTE1";
        case PIPE_MTE2: return "MTE2";
        case PIPE_MTE3: return "MTE3";
        case PIPE_FIX: return "FIX";
        case PIPE_ALL: return "ALL";
        default: return "-";
    }
}
inline const char* RecMem(int8_t m) {
    static const char* kNames[] = {"UB", "L1", "L0A", "L0B", "L0C", "GM"};
    return (m >= 0 && m <= kRecGm) ? kNames[m] : "-";
}
inline std::string RecNum(int64_t v) { return v < 0 ? std::string("-") : std::to_string(v); }
inline const char* RecText(const char* s) { return (s && *s) ? s : "-"; }
inline const char* Basename(const char* path) {
    if (!path) return nullptr;
    const char* b = path;
    for (const char* p = path; *p; ++p)
        if (*p == '/' || *p == '\\') b = p + 1;
    return b;
}
// The elems and bytes columns: what the API noted, else what its accesses added up to.
inline int64_t RowElems(const Row& r) {
    if (r.elems >= 0) return r.elems;
    if (r.writeElems > 0) return r.writeElems;
    return r.readElems > 0 ? r.readElems : -1;
}
inline int64_t RowBytes(const Row& r) {
    if (r.gmBytes > 0) return r.gmBytes;
    return r.localBytes > 0 ? r.localBytes : -1;
}
inline std::string RecEvent(int16_t e) {
    return e < 0 ? std::string("-") : std::string(Describe(static_cast<AscendC::HardEvent>(e)).name);
}

inline void WriteRow(std::string& out, const CoreCtx& c, const std::string& core, const Row& r) {
    const std::string cols[] = {
        core, std::to_string(c.blockIdx), std::to_string(c.subBlockIdx), std::to_string(r.seq), RecPipe(r.pipe),
        RecText(r.api), RecText(Basename(r.site.file)), r.site.file ? std::to_string(r.site.line) : "-",
        RecNum(RowElems(r)), RecNum(r.repeats), RecNum(RowBytes(r)), RecMem(r.src), RecMem(r.dst), RecText(r.dtype),
        RecNum(r.m), RecNum(r.k), RecNum(r.n), RecNum(r.blocks), RecNum(r.blocklen), RecNum(r.gm), RecNum(r.gmoff), RecNum(r.gmend),
        RecEvent(r.event), RecNum(r.id), RecNum(r.mode), RecNum(r.flag), RecText(r.from.c_str()), RecText(r.queue)};
    bool first = true;
    for (const std::string& s : cols) {
        if (!first) out += '\t';
        out += s;
        first = false;
    }
    out += '\n';
}

// Writes the record of launch L of kernel `name` to $FADSL_RECORD (tmp file + rename).
inline void WriteRecord(const LaunchState& L, const char* name, const char* path) {
    static int launches = 0;
    std::string out = Str("# fadsl executed-instruction record, format ", kRecordVersion, "\n# kernel ", name,
                          "\n# launch ", launches++, " of this process (a later launch replaces the record)\n# soc ",
                          kSocVersion, "\n", kRecordColumns, "\n");
    for (const auto& cp : L.cores) {
        const std::string core = RecCore(*cp);
        for (const Row& r : cp->rows) WriteRow(out, *cp, core, r);
    }
    const std::string tmp = std::string(path) + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) FailRaw(Str("FADSL_RECORD=", path, ": cannot write ", tmp));
    const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
    if (std::fclose(f) != 0 || !ok) FailRaw(Str("FADSL_RECORD=", path, ": writing ", tmp, " failed"));
    if (std::rename(tmp.c_str(), path) != 0) FailRaw(Str("FADSL_RECORD=", path, ": cannot rename ", tmp));
}

}  // namespace fadsl_rt
