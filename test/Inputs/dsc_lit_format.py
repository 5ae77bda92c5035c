"""lit's ShTest with OpenMPI's session files in each test's own directory.

OpenMPI keeps a job's session files under <tmp>/ompi.<host>.<uid>, one
directory for every job of the user. A job that ends removes it when it
looks empty, and a job starting beside it at that moment fails in orte_init
("A call to mkdir was unable to create the desired directory"). Each test
here gets its own, beside its %t: lit hands every worker its own copy of
the test's config, so the environment set here is this test's alone. (A
module, not a class in lit.cfg.py: lit pickles the format for its workers.)
"""

import lit.formats
import lit.TestRunner


class ShTestWithOwnMpiSessionDir(lit.formats.ShTest):
    def execute(self, test, litConfig):
        _, tmpBase = lit.TestRunner.getTempPaths(test)
        test.config.environment["OMPI_MCA_orte_tmpdir_base"] = tmpBase + ".mpi"
        return super().execute(test, litConfig)
