"""Small games beside Emberfront, whose exact exploitability OpenSpiel can compute: Leduc and
Kuhn poker (`rules`: their constants and observation row; `poker`: many games at once in numpy;
`openspiel`: the same states in OpenSpiel's words)."""
