"""Custom components: Python classes named by ``class_name`` in a manifest.

* :mod:`.names` - where a ``class_name`` points (a ``components.py`` beside the
  manifest, a module of the connector's package folder, or an installed module),
  from names and files alone.
* :mod:`.protocols` - each kind's contract: Airbyte's method names and signatures.
* :mod:`.loader` - loading the class, behind the gate for code shipped with the
  manifest (``--allow-custom-code``); the shipped files it loaded, for Spark executors.
* :mod:`.construct` - building the object by Airbyte's convention (declared fields,
  ``config``, ``parameters``, nested components built first).
* :mod:`.builders` - the ``@builds("Custom...")`` builders: the object in an adapter
  that fits its runtime slot, errors in user code named and kept.
* :mod:`.source` - what a class's source defines (members, fields, bases) and
  which packages its module needs, read with ``ast`` for ``validate-manifest``.
"""
