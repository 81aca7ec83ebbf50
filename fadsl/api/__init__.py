"""fadsl's Python API (``fd.interpret``, ``fd.check``, ``fd.compile``, ``fd.sim``,
``fd.verify``): ``calls.py`` holds the functions, ``arrays.py`` what they do with the
arrays they are given, ``results.py`` what they return. ``import fadsl`` loads this
package on first use of one of them (docs/api.md).
"""
