import subprocess


def run(path):
    return subprocess.run(["/app/sum_by_category", str(path)], capture_output=True, text=True)


def test_another_export_with_other_columns(tmp_path):
    export = tmp_path / "q2.csv"
    export.write_text("id,amount,customer,category,currency\n"
                      "1,0.10,ann,toys,EUR\n"
                      "2,19,bo,garden,EUR\n"
                      "3,0.20,cy,toys,EUR\n"
                      "4,-4.50,ann,garden,EUR\n"
                      "5,3.333,dee,food,EUR\n")
    r = run(export)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["category,total", "food,3.33", "garden,14.50", "toys,0.30"]


def test_an_export_with_no_sales(tmp_path):
    export = tmp_path / "empty.csv"
    export.write_text("date,region,category,amount\n")
    r = run(export)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["category,total"]
