"""kernels: the array helpers rules and generated code call (unbroadcasting, dtypes, index
adjoints, region writes, outlines, tangents, replay). They know no rules and no syntax tree;
they import nothing of srcad but its errors.
"""
