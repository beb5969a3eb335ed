// Long engine calls (training, evaluation) run on threads the addon owns, not on libuv's pool: a paused or
// long run must not hold one of the pool's 4 threads that fs, dns, zlib and crypto share. Everything
// the thread sends back (events, the result) crosses to the JS thread through a ThreadSafeFunction, in
// order, and only there touches N-API.
//
// No thread outlives its environment: the ThreadSafeFunction's finalizer (on the JS thread, after the
// last task ran, or while a Worker's environment is torn down) stops and joins the thread before the job
// is deleted; process.exit(), which tears nothing down, stops and joins every thread still running from
// an atexit handler.
#pragma once

#include <napi.h>

#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace nnstudio::addon {

// Work for the JS thread; dropped, not run, when the environment is going away.
using JsTask = std::function<void(Napi::Env)>;

class EngineThreadJob {
 public:
  virtual ~EngineThreadJob() = default;
  EngineThreadJob(const EngineThreadJob&) = delete;
  EngineThreadJob& operator=(const EngineThreadJob&) = delete;

  // JS thread: runs job->run() on a new thread. From here on the job owns itself; it is deleted on the JS
  // thread once run() returned and its tasks ran (or were dropped). Throws if no thread can be started.
  static void start(Napi::Env env, const char* name, std::unique_ptr<EngineThreadJob> job);

 protected:
  EngineThreadJob() = default;

  // The job's thread.
  virtual void run() = 0;
  // Any thread: make run() return soon (the environment or the process is going away).
  virtual void stop() = 0;
  // The job's thread: queues `task` for the JS thread, after the tasks posted before it. false: the
  // environment is going away, the task was dropped, and run() should wind up (stop() has been called).
  bool post(JsTask task);

 private:
  friend class LiveJobs;
  static void runTask(napi_env env, napi_value callback, void* context, void* data);
  static void finalize(napi_env env, void* data, void* hint);
  void stopAndJoin();

  napi_threadsafe_function tsfn_ = nullptr;
  bool closing_ = false;  // the job's thread only: a post found the environment closing
  std::mutex joinMutex_;  // the finalizer and the exit handler may both join
  std::thread thread_;
};

}  // namespace nnstudio::addon
