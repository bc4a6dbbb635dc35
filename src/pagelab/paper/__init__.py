"""The paper layer, the top: the paper (`paper`) and its lint (`paperlint`), the appendix
(`appendix`), the results page (`report`) and the fleet's merge and section (`fleetmerge`). The
command line, `pagelab.cli`, stands beside this package in the same layer.
"""
