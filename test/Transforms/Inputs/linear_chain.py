"""Writes a chain of bias-free linear layers as a dsc forward graph, for
report tests that need exact parameter counts and no weights.

    linear_chain.py ROWS OUTxIN[,OUTxIN...][*REPEAT] ...

(a comma-separated group repeats as a whole).

Layer i is `l<i>.weight` of shape [OUT, IN] (PyTorch's nn.Linear layout);
each layer's IN must equal the previous OUT. The loss is the mean of the
last layer's output on a `x` input of ROWS rows.
"""
import sys


def main(argv):
    rows = int(argv[1])
    shapes = []
    for item in argv[2:]:
        group, _, repeat = item.partition("*")
        pairs = [tuple(int(d) for d in shape.split("x"))
                 for shape in group.split(",")]
        shapes += pairs * int(repeat or 1)
    lines = [f'dsc.state parameter @"l{i}.weight" : tensor<{o}x{n}xf32>'
             for i, (o, n) in enumerate(shapes)]
    width = shapes[0][1]
    lines.append(f'func.func @forward(%x: tensor<{rows}x{width}xf32> '
                 '{dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {')
    h = "%x"
    for i, (o, n) in enumerate(shapes):
        if n != width:
            sys.exit(f"layer {i}: input {n} != previous output {width}")
        lines.append(f'  %w{i} = dsc.load @"l{i}.weight" : tensor<{o}x{n}xf32>')
        lines.append(f'  %h{i} = dsc.linear {h}, %w{i} : tensor<{rows}x{n}xf32>, '
                     f'tensor<{o}x{n}xf32>')
        h, width = f"%h{i}", o
    lines.append(f"  %loss = dsc.reduce_mean {h}, dims = [0, 1] : "
                 f"tensor<{rows}x{width}xf32>")
    lines.append("  return %loss : tensor<f32>")
    lines.append("}")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv)
