import geometry
import shapes


def test_other_shapes_work_through_both_modules():
    assert geometry.Circle is shapes.Circle and geometry.Rectangle is shapes.Rectangle
    assert shapes.Rectangle.__module__ == "shapes" and shapes.Circle.__module__ == "shapes"
