import subprocess
import sys

from greet import main


def test_upper(capsys):
    assert main(["ada", "--upper"]) == 0
    assert capsys.readouterr().out == "HELLO, ADA!\n"


def test_upper_from_the_command_line():
    out = subprocess.run([sys.executable, "greet.py", "bob", "--upper", "--times", "2"],
                         capture_output=True, text=True, check=True).stdout
    assert out == "HELLO, BOB!\nHELLO, BOB!\n"
