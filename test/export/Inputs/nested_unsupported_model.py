import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.erfinv(torch.tanh(self.fc(x)))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP()

    def forward(self, x):
        return x + self.mlp(x)


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.h = nn.ModuleList([Block()])

    def forward(self, x):
        for block in self.h:
            x = block(x)
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = Transformer()

    def forward(self, x):
        return torch.lgamma(self.transformer(x)).mean()


def build():
    return Model(), (torch.randn(2, 4),)
