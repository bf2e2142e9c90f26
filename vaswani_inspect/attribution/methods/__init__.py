"""The attribution methods, one module each (or one per family: the gradient methods share one): each module
defines its method's function and registers its entry (`vaswani_inspect.attribution.registry.Method`). The
registry imports every module here the first time a list of methods is read, so adding a method is adding a
module here (docs/extending.md); the computations they call live beside the package's other modules
(`..attention`, `..rollout`, `..gradients`, `..value_zeroing`, `..alti`)."""
