"""Shared by the Python examples: a synthetic ImageNet-like dataset and a small ResNet-style CNN.

The data is generated deterministically on the fly (every rank and every DataLoader worker computes
the same sample for the same index, nothing is downloaded): 64 classes of 3x32x32 images, each class
a fixed low-frequency colour pattern plus per-sample noise and a random shift, so there is real
structure to learn and the loss really falls."""
import torch
import torch.nn as nn
import torch.nn.functional as F

NUM_CLASSES = 64
IMAGE_SHAPE = (3, 32, 32)


class SyntheticImageNet(torch.utils.data.Dataset):
    def __init__(self, size=8192, num_classes=NUM_CLASSES, noise=0.6, seed=1234):
        self.size, self.num_classes, self.noise, self.seed = size, num_classes, noise, seed
        g = torch.Generator().manual_seed(seed)
        coarse = torch.randn(num_classes, 3, 4, 4, generator=g)
        self.prototypes = F.interpolate(coarse, size=IMAGE_SHAPE[1:], mode="bilinear", align_corners=False)

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        label = int(torch.randint(self.num_classes, (1,), generator=g))
        shift = torch.randint(-2, 3, (2,), generator=g).tolist()
        image = torch.roll(self.prototypes[label], shifts=shift, dims=(1, 2))
        image = image + self.noise * torch.randn(IMAGE_SHAPE, generator=g)
        return image, label


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class TinyResNet(nn.Module):
    """ResNet's shape (stem, residual stages that halve the resolution, global pool, linear head)
    at a width a CPU trains in seconds."""

    def __init__(self, num_classes=NUM_CLASSES, width=8):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.stages = nn.Sequential(BasicBlock(width, width), BasicBlock(width, 2 * width, 2),
                                    BasicBlock(2 * width, 4 * width, 2))
        self.head = nn.Linear(4 * width, num_classes)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
