"""The analysis layer: analysis across experiments and runs (`compare`: two runs side by side;
`reliability`: the fresh-clone CI runs).
"""
