from greet import main


def test_default(capsys):
    assert main(["ada", "--times", "2"]) == 0
    assert capsys.readouterr().out == "Hello, ada!\nHello, ada!\n"
