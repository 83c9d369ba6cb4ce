"""Custom components: Python classes named by ``class_name`` in a manifest.

* :mod:`.names` - where a ``class_name`` points (a ``components.py`` beside the
  manifest, a module of the connector's package folder, or an installed module),
  from names and files alone.
* :mod:`.source` - what a class's source defines (members, fields, bases) and
  which packages its module needs, read with ``ast`` for ``validate-manifest``.
"""
