"""The paper layer, the top: verdicts on the claims (`claims`), the paper (`paper`), the results
page (`report`) and the fleet's merge (`fleet`). The command line, `pagelab.cli`, stands beside
this package in the same layer.
"""
