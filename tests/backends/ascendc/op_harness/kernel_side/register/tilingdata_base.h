// Kernel side of the tiling data (fadsl's own test stand-in): get_tiling_data.h defines the
// macros before op_host/<op>_tiling.h includes this file, so it has nothing to add.
