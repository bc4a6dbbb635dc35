"""The data layer: what runs leave behind, read and written, recorded runs (`recording`:
data/recorded/, replayed into a results directory) and trial records as a table (`tidy`).
"""
