import subprocess
import sys

from greet import main


def test_upper_other_names(capsys):
    assert main(["grace hopper", "--upper", "--times", "3"]) == 0
    assert capsys.readouterr().out == "HELLO, GRACE HOPPER!\n" * 3
    assert main(["Zoë"]) == 0
    assert capsys.readouterr().out == "Hello, Zoë!\n"


def test_upper_flag_first_on_the_command_line():
    out = subprocess.run([sys.executable, "greet.py", "--upper", "kim"], capture_output=True, text=True, check=True).stdout
    assert out == "HELLO, KIM!\n"
