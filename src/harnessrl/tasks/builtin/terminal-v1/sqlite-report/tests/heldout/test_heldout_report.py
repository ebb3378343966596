import sqlite3
import subprocess


def run(*args):
    return subprocess.run(["/app/top_customers", *args], capture_output=True, text=True)


def make_db(path):
    db = sqlite3.connect(path)
    db.executescript('''
    CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT);
    CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER, total REAL);
    INSERT INTO customers VALUES (1,'Zoe Park'),(2,'Al'),(3,'Mia'),(4,'Kai'),(5,'Noor'),(6,'Bo');
    INSERT INTO orders(customer_id,total) VALUES
        (1,12.5),(1,7.5),(2,20.0),(3,0.1),(3,0.2),(4,15.75),(4,4.25),(6,3),(6,4.25);
    ''')  # Noor has no orders; Zoe Park, Al and Kai tie at 20.00
    db.commit()
    db.close()


def test_other_database(tmp_path):
    path = tmp_path / "crm data.db"
    make_db(path)
    r = run(str(path), "3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["Al\t20.00", "Kai\t20.00", "Zoe Park\t20.00"]
    # more than there are buyers: every customer with orders, none without
    assert run(str(path), "50").stdout.splitlines() == [
        "Al\t20.00", "Kai\t20.00", "Zoe Park\t20.00", "Bo\t7.25", "Mia\t0.30"]
    assert run(str(path), "0").stdout == ""
    assert sqlite3.connect(path).execute("select count(*) from orders").fetchone()[0] == 9


def test_other_bad_arguments(tmp_path):
    missing = tmp_path / "missing.db"
    r = run(str(missing), "2")
    assert r.returncode == 2 and "usage" in r.stderr.lower()
    assert not missing.exists()  # no empty database left behind
    make_db(tmp_path / "x.db")
    assert run(str(tmp_path / "x.db"), "two").returncode == 2
    assert run(str(tmp_path / "x.db"), "-1").returncode == 2
