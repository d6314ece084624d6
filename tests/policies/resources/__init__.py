"""Resources as the engine hands them to the pack, built by hand per cloud (camelCase props as the providers' SDKs
name them, links as the engine's property dependencies): the compliant baselines the rule tests change one property
of. One module per cloud; tests of one cloud import its names, tests of several import the modules."""
