"""The analysis layer: analysis across experiments and runs (`compare`: two runs side by side;
`appendix`: the paper's appendix).
"""
