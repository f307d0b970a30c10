set -u
mkdir -p /tmp/b && tar xJf bin/gpu-bundle.tar.xz -C /tmp/b && xz -dc bin/old-train.test.xz > /tmp/b/old.test && chmod +x /tmp/b/old.test
B=/tmp/b/gpu-bundle; cd $B && GPU_CHECK_OUT=$OUT/check timeout 330 bash scripts/gpu-check.sh > $OUT/check.log 2>&1
rm -rf $OUT/check/cache $OUT/check/demo/checkpoint* 
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64 GMCN_DATA=$B/data GMCN_TEST_DEVICE=cuda
cd $B/train
for i in 1 2; do
 timeout 60 /tmp/b/old.test -test.run '^$' -test.bench 'TrainStep/paper(_fused)?_B32' -test.benchtime 3x 2>&1 | grep '^Bench' >> $OUT/old.txt
 timeout 60 ../bin/gpu/train.test -test.run '^$' -test.bench 'TrainStep/paper(_fused)?_B32' -test.benchtime 3x 2>&1 | grep '^Bench' >> $OUT/new.txt
done
timeout 60 ../bin/gpu/train.test -test.run '^$' -test.bench 'TrainStep/paper_fused_B32' -test.benchtime 10x -test.cpuprofile $OUT/fused.prof > /dev/null 2>&1
tail -12 $OUT/check/summary.md; cat $OUT/old.txt $OUT/new.txt
