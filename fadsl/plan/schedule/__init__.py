"""Schedule: which unit runs each op, pipelining across iterations, task order, masks only some blocks need."""
