"""Frontend: turns a decorated Python kernel (or traced mods) into IR."""
