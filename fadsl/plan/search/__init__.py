"""The search over tile configurations (``fadsl tune``): sound bounds that decide most
configurations in bulk, and the memo that lets the exact plans of the rest be shared
with the cost model."""
