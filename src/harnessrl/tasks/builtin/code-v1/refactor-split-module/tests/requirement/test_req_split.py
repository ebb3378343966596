import ast
from pathlib import Path

import geometry
import shapes


def test_classes_live_in_shapes():
    assert shapes.Circle.__module__ == "shapes" and shapes.Rectangle.__module__ == "shapes"
    assert geometry.Circle is shapes.Circle and geometry.Rectangle is shapes.Rectangle


def test_geometry_defines_no_classes_and_shapes_no_geometry_import():
    tree = ast.parse(Path(geometry.__file__).read_text())
    assert not [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert "geometry" not in Path(shapes.__file__).read_text()
