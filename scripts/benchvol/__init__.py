"""The parts of scripts/make-bench-volume.py, which builds the uffs benchmark volume (docs/benchmarks.md).

words     knobs, the embedded word lists, the size profile of each extension
model     Tree (the whole volume in creation order, with sizes, times, DOS names, streams) and name generators
system    Windows, npm / node_modules, Program Files
users     the users' folders: documents, pictures, music, downloads, AppData, source trees
generate  ProgramData, developer roots, the root, filler, sparse giants, deleted entries; generate(), tree_stats()
build     mkntfs, the ntfs-3g mount and the FUSE clients that create everything; the sparse copy into place

Names and structure come from Tree.rng, metadata from its other generators, so the tree is a function of the seed,
--entries and the knobs.
"""
