// fadsl's own stand-in, for tests only, of what CANN's op build gives a kernel for
// GET_TILING_DATA (asc-devkit docs .../Kernel-Tiling/GET_TILING_DATA.md): a plain struct with
// the fields of the tiling class registered in op_host/<op>_tiling.h (FADSL_OP_TILING), read
// from the tiling pointer. Force-included (-include) before the kernel source.
#ifndef FADSL_TEST_GET_TILING_DATA_H
#define FADSL_TEST_GET_TILING_DATA_H

#include <cstdint>

#define BEGIN_TILING_DATA_DEF(class_name) struct class_name {
#define TILING_DATA_FIELD_DEF(data_type, field_name) data_type field_name;
#define END_TILING_DATA_DEF }
#define REGISTER_TILING_DATA_CLASS(op_type, class_name)
#define optiling fadsl_kernel_tiling
#include FADSL_OP_TILING
#undef optiling

#define GET_TILING_DATA(var, tiling) \
    FADSL_TILING_TYPE var;           \
    fadsl::CopyTiling(&var, tiling)

#endif
