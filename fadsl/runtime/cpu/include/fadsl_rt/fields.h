// fadsl CPU runtime: the documented ranges of Ascend C parameter fields, and the checked
// narrowing that fadsl_tile.h's fadsl::Field<T> uses when it runs on this runtime. A value
// outside a field's range (or one its C type cannot hold) stops the run with one clear line;
// the real hardware would silently misread it. Ranges: docs/backend.md, "Ascend C parameter
// fields" (asc-devkit docs of each struct).
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core.h"

// Tells fadsl_tile.h that fadsl::Field<T> may check (on the device it is a plain cast) and
// that fadsl::TaskDone may count (on the device it is empty).
#define FADSL_CPU_RUNTIME 1

namespace fadsl_rt {

inline void CheckField(const char* api, const char* field, uint64_t value, uint64_t lo, uint64_t hi) {
    if (value < lo || value > hi)
        Fail(api, Str(field, " = ", value, " is outside its documented range [", lo, ", ", hi, "]"));
}

template <typename T>
const char* FieldTypeName() {
    if (std::is_same<T, uint8_t>::value) return "uint8_t";
    if (std::is_same<T, uint16_t>::value) return "uint16_t";
    if (std::is_same<T, uint32_t>::value) return "uint32_t";
    if (std::is_same<T, int32_t>::value) return "int32_t";
    return "integer";
}

// `value` as the field type T, failing instead of wrapping when T cannot hold it.
template <typename T>
T NarrowField(int64_t value, const char* name) {
    static_assert(std::is_integral<T>::value, "fadsl::Field<T> narrows to an integer field type");
    const bool low = value < static_cast<int64_t>(std::numeric_limits<T>::min());
    const bool high = value > 0 && static_cast<uint64_t>(value) > static_cast<uint64_t>(std::numeric_limits<T>::max());
    if (low || high)
        Fail("fadsl::Field", Str(name, " = ", value, " does not fit its ", FieldTypeName<T>(),
                                 " field (a cast would wrap it to ",
                                 static_cast<int64_t>(static_cast<T>(value)), ")"));
    return static_cast<T>(value);
}

}  // namespace fadsl_rt
