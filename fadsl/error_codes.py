"""Stable error codes: every catalogued kind of error and its number (``error[E42]``).

A kind is named by its entry in the error catalogue (``tests/errors/catalogue.py``,
rendered as docs/errors.md); the code that raises it passes that name
(``UsageError(..., code="shape_syntax")``) and the message's headline prints the
number (``fadsl: usage error[E21]: ...``); ``fadsl explain E21`` prints the entry.

A number never changes once it is on main: a new kind takes the next number after the
largest here, wherever its entry sits in the catalogue, and a kind that goes away
leaves its number unused. ``tests/errors/test_error_codes.py`` fails when two kinds
share a number, when a catalogue entry has no number (or a number no entry), when a
catalogued mistake's message does not print its number, or when a name passed as
``code=`` is not here.
"""

from __future__ import annotations

CODES: dict[str, int] = {
    "unknown_op": 1,
    "unknown_keyword": 2,
    "dot_contraction": 3,
    "dot_rank": 4,
    "dtype_mismatch": 5,
    "loop_carried_dtype": 6,
    "loop_carried_shape": 7,
    "unsupported_construct": 8,
    "undefined_name": 9,
    "loop_local_used_after": 10,
    "branch_on_tile": 11,
    "store_to_input": 12,
    "index_rank": 13,
    "python_library_call": 14,
    "missing_annotation": 15,
    "kernel_name_path": 16,
    "kernel_name_taken": 17,
    "python_syntax_error": 18,
    "no_kernel": 19,
    "import_fails": 20,
    "shape_syntax": 21,
    "shape_unknown_symbol": 22,
    "shape_missing_symbol": 23,
    "shape_not_positive": 24,
    "set_syntax": 25,
    "set_unknown": 26,
    "set_scalar_not_finite": 27,
    "block_size_zero": 28,
    "block_size_negative": 29,
    "block_size_not_fractal": 30,
    "resource_overflow": 31,
    "scalar_of_runtime_symbol": 32,
    "unknown_target": 33,
    "unknown_dtype": 34,
    "kernel_not_found": 35,
    "missing_input_bin": 36,
    "short_input_bin": 37,
    "inputs_dtype_mismatch": 38,
    "cu_seqlens_invalid": 39,
    "index_input_out_of_range": 40,
    "output_is_a_file": 41,
    "output_is_current_folder": 42,
    "verify_sizes": 43,
    "verify_shapes_differ": 44,
    "verify_implausible_record": 45,
    "ir_unknown_op": 46,
    "gqa_heads": 47,
    "score_mod_returns_mask": 48,
    "score_mod_calls_numpy": 49,
    "mask_mod_returns_score": 50,
    "api_field_overflow": 51,
    "event_pool_overflow": 52,
    "extra_tensor_not_indexed": 53,
    "block_dim_zero": 54,
    "output_not_replaceable": 55,
    "window_right_with_causal": 56,
    "tensor_dtype_unknown": 57,
    "shape_not_ascii": 58,
    "target_empty": 59,
    "timeout_not_positive": 60,
    "fir_not_utf8": 61,
    "target_file_device": 62,
    "meta_json_too_deep": 63,
    "mask_combines_number": 64,
    "padded_head_dim_reduction": 65,
    "atomic_add_not_f32": 66,
    "paged_page_out_of_range": 67,
    "paged_length_past_table": 68,
    "score_mod_not_differentiable": 69,
    "api_unknown_input": 70,
    "api_input_shape": 71,
    "api_input_dtype": 72,
    "api_not_an_array": 73,
    "api_missing_symbol": 74,
    "ir_ring_impossible": 75,
    "model_runtime_bound": 76,
    "torch_input_dtype": 77,
    "torch_input_shape": 78,
    "torch_devices": 79,
    "torch_arguments": 80,
    "torch_backward_mismatch": 81,
    "torch_register_consts": 82,
    "vector_rows_and_columns": 83,
    "atomic_sync_flags": 84,
    "ir_defer_impossible": 85,
    "post_grid_dot": 86,
    "third_grid": 87,
    "ir_row_chunk_value": 88,
    "ir_row_chunk_impossible": 89,
    "view_size": 90,
    "ir_l0_tile_split": 91,
    "paged_block_not_whole_pages": 92,
    "paged_load_not_whole_pages": 93,
    "ir_slot_free_flags": 94,
    "explain_unknown_code": 95,
    "torch_no_backward": 96,
    "output_never_written": 97,
    "several_kernels": 98,
    "device_memory": 99,
    "backward_keyword": 100,
    "debug_print_holes": 101,
    "debug_print_args": 102,
    "device_assert_not_a_mask": 103,
    "device_assert_failed": 104,
    "mod_math_unsupported": 105,
    "block_mask_block_size": 106,
    "block_mask_unfit": 107,
    "debug_operand_not_printable": 108,
    "configs_syntax": 109,
    "v_from_k_needs_paged": 120,
    "v_from_k_value_dim": 121,
    "prefill_chunk_past_keys": 125,
    "prefill_pack_gqa": 126,
    "kv_quant_keywords": 127,
    "int8_cache_not_compiled": 128,
    "gather_index_unbounded": 129,
    "gather_index_out_of_range": 130,
    "inplace_alias": 131,
    "append_unsupported": 132,
    "append_inputs": 133,
    "v_from_k_no_value_dim": 134,
    "tensor_grad_not_float": 135,
    "tensor_grad_not_on_ascendc": 136,
    "tensor_grad_not_differentiable": 137,
    "take_columns_unaligned": 138,
}
"""Kind name (the catalogue entry's id) -> its number; append new kinds at the end."""


def code_text(name: str) -> str:
    """``E07`` for the kind ``name`` (two digits at least, as docs/errors.md heads it)."""
    return f"E{CODES[name]:02d}"


def name_of(text: str) -> str | None:
    """The kind a user means by ``text``: a code as messages print it (``E07``, also
    ``e7``, ``7``) or the kind's name (``dot_rank``); None for neither."""
    if text in CODES:
        return text
    digits = text[1:] if text[:1] in ("E", "e") else text
    if not (digits.isascii() and digits.isdigit()):
        return None
    number = int(digits)
    return next((name for name, n in CODES.items() if n == number), None)
